import CThreads
import Foundation
import Synchronization

/// The write end of the pipe the signal handler reports to (-1 until ``StopSignal`` sets it).
/// `nonisolated(unsafe)`: written once, before the handler is installed (under `StopSignal.shared`'s
/// one-time initialisation); read only by the handler.
nonisolated(unsafe) private var stopSignalPipe: Int32 = -1

/// Catches SIGINT and SIGTERM for the whole process, from its first use on, and reports the first one
/// to every listener (at once to a listener that comes later).
///
/// A signal handler writes the signal's number to a pipe (async-signal-safe), and a thread of our own
/// reads it: a signal is never lost whichever thread the kernel delivers it to, even one that arrives
/// while the server is still starting. (libdispatch's signal sources can lose one: they only see a
/// signal that lands on a thread they watch.) The async signals are also kept off the event loops'
/// threads, which block them.
final class StopSignal: Sendable {
    /// The process's one instance: installing the handlers twice would orphan the first pipe.
    static let shared = StopSignal(signals: [SIGINT, SIGTERM])

    private struct State {
        var received: Int32?
        var listeners: [@Sendable (Int32) -> Void] = []
    }

    private let state = Mutex(State())

    private init(signals: [Int32]) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            FileHandle.standardError.write(Data("diffstream: pipe() for signal handling failed (errno \(errno)); signals stop the process at once\n".utf8))
            return
        }
        stopSignalPipe = fds[1]
        for signalNumber in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signalNumber in
                var byte = UInt8(truncatingIfNeeded: signalNumber)
                _ = write(stopSignalPipe, &byte, 1)
            }
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(signalNumber, &action, nil)
        }
        let readEnd = fds[0]
        let thread = Thread { [self] in
            diffstream_name_this_thread("signals")
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) != 1 {}
            self.fire(Int32(byte))
        }
        thread.start()
    }

    private func fire(_ signalNumber: Int32) {
        let listeners = state.withLock { state -> [@Sendable (Int32) -> Void] in
            guard state.received == nil else { return [] }
            state.received = signalNumber
            defer { state.listeners = [] }
            return state.listeners
        }
        for listener in listeners { listener(signalNumber) }
    }

    /// Calls `listener` with the first signal: at once if it has already arrived.
    func onSignal(_ listener: @escaping @Sendable (Int32) -> Void) {
        let received = state.withLock { state -> Int32? in
            if state.received == nil { state.listeners.append(listener) }
            return state.received
        }
        if let received { listener(received) }
    }
}
