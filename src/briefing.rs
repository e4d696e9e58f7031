//! Session-start briefing: composed from the store (or a server's handoff) within the marker's budget.
