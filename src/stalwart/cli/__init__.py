"""The `stalwart` command line: det's nouns and verbs, tables for people, --json for scripts."""
