"""Ego-ADR reasoning: prompts, text-only probe, narration, classification and the pipeline."""
