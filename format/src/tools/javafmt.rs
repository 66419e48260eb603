//! Java-style text for values: `Float.toString`/`Double.toString` (shortest form, JDK
//! 19+) and the canonical dump's text escaping.
//!
//! (In progress.)
