import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Waiting for a test's child process to end, in place of `Process.waitUntilExit()`.
///
/// `waitUntilExit()` spins a run loop until Foundation has seen the child's exit status; when another
/// thread of the test process reaps the child first (Swift Testing's exit-test monitor waits for any
/// child with `waitid(P_ALL)`), it never does, and the test spins forever on a pool thread. A blocking
/// `waitpid` on the child's pid ends either way: with its status, or with `ECHILD` once someone else
/// has reaped it.
public enum ChildProcess {
    /// Blocks until `process` has ended (it must have been started).
    public static func waitForExit(_ process: Process) {
        let pid = process.processIdentifier
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }
}
