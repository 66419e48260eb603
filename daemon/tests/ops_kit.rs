//! Checks of the operations kit (filled in by the following commits).
