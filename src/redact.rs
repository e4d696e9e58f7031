//! Secret redaction and text hygiene applied to every excerpt before any cap.
