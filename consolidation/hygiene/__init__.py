"""Memory hygiene (pure): reading a text, weighing the evidence of a pair, and the rules for merges and changes."""
