"""SQL text for rules: a tokeniser, statements with cheap structure, a script splitter."""
