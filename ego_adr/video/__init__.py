"""Frames from video: the sampler, its decoders, background prefetch and the synthetic demo clips."""
