//! Capture policy: which tool activity a project keeps out of capture (DESIGN §3).
