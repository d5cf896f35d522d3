//! The one fault point every write and rename of a tree's files passes
//! (compiled in with the `fault-injection` feature; the crash tests fail or
//! panic at it, one step after another). A leaf: the modules that write
//! files call it without depending on the generation logic above them.

/// The name a fault-injection test configures (`fail::cfg`).
pub const FAULT_POINT: &str = "treenav::io";

/// One step of writing or renaming a tree's files: where injected faults
/// strike (a no-op unless a test configured [`FAULT_POINT`]).
pub fn io_step() -> std::io::Result<()> {
    fail::fail_point!(FAULT_POINT, |_| Err(std::io::Error::new(
        std::io::ErrorKind::StorageFull,
        "injected fault: no space left on device"
    )));
    Ok(())
}
