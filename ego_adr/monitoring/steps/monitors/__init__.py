"""Step-stream monitors of Assembly101-O and EPIC-Tent-O, one module per family (the registry names them)."""
