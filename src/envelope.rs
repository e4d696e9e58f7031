//! What the hook prints on stdout, per agent.
