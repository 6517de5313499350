"""ego_adr: procedural error detection from egocentric video with any video-language model.

Importing the package is cheap: no model, torch or video library is imported until a run needs it.
"""

__version__ = "0.1.0"
