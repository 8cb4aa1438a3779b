"""Entity hygiene: which `Entity` nodes of one category and scope name the same thing (pure)."""
