//! IoTDB 0.10 `.resource` files (spec §9.2).
//!
//! (In progress.)
