"""Memory hygiene: reading texts, weighing a pair's evidence, deciding, the rules for merges and changes (all
pure), and the optional model judge of the grey zone (model_judge.py, which calls a chat model)."""
