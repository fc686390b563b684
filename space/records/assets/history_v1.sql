CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created_s REAL NOT NULL,          -- Unix time the run finished
            kind TEXT NOT NULL,               -- compare | sweep
            user TEXT,                        -- login name; NULL without logins
            model TEXT NOT NULL,
            method TEXT,
            k INTEGER,                        -- NULL for a sweep over k
            temperature REAL,
            verdict TEXT,                     -- the checklist's; NULL for a sweep
            speedup REAL,
            record TEXT NOT NULL              -- the full record, JSON
        )
