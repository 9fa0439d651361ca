-- Suppressions and unreadable SQL (META rules).

-- passes: a known exception, suppressed on its statement
SELECT SQL_CACHE COUNT(*) FROM users; -- govern: ignore[QC005]

-- fires META002: no rule QC099
SELECT id FROM users WHERE id = 7; -- govern: ignore[QC099]

-- fires META003: nothing to suppress here
SELECT id FROM users WHERE id = 8; -- govern: ignore[QC001]

-- fires META001: a typo the server would reject
SELEC id FROM users WHERE id = 9;
