//! GORILLA, the 0.10 variant (spec §6.5).
