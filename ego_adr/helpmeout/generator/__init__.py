"""Making episodes: the goal-control model and the nine categories (``goal_control``, Tables 4 and 8), where each
error can be injected (``generator_sites``, Table 9), the injection itself and its onsets (``injection``), paired
episodes, splits and release statistics (``episodes``), the composition beside the paper's (``composition``),
how predictable each category is (``difficulty``) and the episode files (``io``). Reads the world, never a
monitor."""
