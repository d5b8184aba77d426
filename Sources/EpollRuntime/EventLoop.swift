#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
import CThreads
import Foundation
import Synchronization

/// Something that reacts to readiness of one file descriptor. Called on the loop's thread only.
protocol EventHandler: AnyObject {
    func handle(events: UInt32)
}

/// One thread and one epoll instance that own readiness for every socket of a server.
///
/// Why not a DispatchSource per socket: libdispatch on Linux has open bugs when a source for a socket
/// is cancelled and a new one created for the same descriptor under churn (corrupted epoll state,
/// crashes). One level-triggered epoll loop of our own avoids that and keeps every connection's state
/// on one thread, with no locks on the hot path. Work from other threads arrives through
/// ``execute(_:)``, which wakes the loop with an eventfd; request handlers run elsewhere (Swift
/// concurrency) and hand their responses back the same way.
///
/// `@unchecked Sendable`: `handlers` and the tick callback are touched only on the loop's own thread;
/// the only state shared across threads is `inbox`, guarded by a `Mutex`.
final class EventLoop: @unchecked Sendable {
    private let epollFD: Int32
    private let wakeFD: Int32
    private var handlers: [Int32: EventHandler] = [:]
    private let inbox = Mutex<[() -> Void]>([])
    private let running = Atomic<Bool>(false)
    /// `pthread_self()` of the loop's thread once it runs (0 before).
    private let threadID = Atomic<UInt>(0)
    private var thread: Thread?
    /// Called on the loop thread about every `tickInterval` seconds (timeouts, heartbeats).
    var onTick: ((Double) -> Void)?
    let tickInterval: Double = 0.1

    init() throws(SystemError) {
        epollFD = try systemCall("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        do {
            wakeFD = try systemCall("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) }
        } catch {
            close(epollFD)
            throw error
        }
    }

    deinit {
        close(wakeFD)
        close(epollFD)
    }

    /// Seconds on the monotonic clock.
    @inline(__always)
    static func now() -> Double { MonotonicClock.now() }

    /// The `epoll_wait` timeout that sleeps until `deadline`: whole milliseconds, rounded up. Rounded
    /// down, the last fraction of a millisecond before each tick became a timeout of 0, and the loop
    /// spun through it (about 0.8 ms of CPU per tick, 1.6% of a core for an idle server).
    static func waitMilliseconds(until deadline: Double, now: Double) -> Int32 {
        let milliseconds = ((deadline - now) * 1000).rounded(.up)
        return milliseconds <= 0 ? 0 : Int32(min(milliseconds, Double(Int32.max)))
    }

    /// Runs `work` on the loop's thread, after the work queued before it.
    func execute(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty = inbox.withLock { queue in
            queue.append(work)
            return queue.count == 1
        }
        // On the loop's own thread the inbox is drained before the loop waits again: no wake-up needed.
        if wasEmpty && !isCurrent {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Watches a descriptor. Loop thread only.
    func register(_ fd: Int32, events: UInt32, handler: EventHandler) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        _ = try systemCall("epoll_ctl(ADD)") { epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) }
        handlers[fd] = handler
    }

    /// Changes what a descriptor is watched for. Loop thread only.
    func modify(_ fd: Int32, events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
    }

    /// Stops watching a descriptor (before it is closed). Loop thread only.
    func deregister(_ fd: Int32) {
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
        handlers[fd] = nil
    }

    /// Starts the loop's thread.
    func start(name: String) {
        running.store(true, ordering: .releasing)
        // Named from inside, first thing (CThreads's diffstream_name_this_thread says why).
        let thread = Thread { [self] in
            diffstream_name_this_thread(name)
            self.run()
        }
        thread.stackSize = 1 << 20
        self.thread = thread
        thread.start()
    }

    /// Asks the loop to stop after the current iteration.
    func stop() {
        running.store(false, ordering: .releasing)
        execute {}
    }

    /// Keeps asynchronous signals off this thread: whoever handles them (the executable takes SIGINT
    /// and SIGTERM with `sigwait` on a thread of its own) should get them, never a loop thread.
    private static func blockAsynchronousSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGCHLD] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        Self.blockAsynchronousSignals()
        var wakeEvent = epoll_event()
        wakeEvent.events = Epoll.`in`
        wakeEvent.data.fd = wakeFD
        _ = epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &wakeEvent)
        let capacity = 512
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        var nextTick = Self.now() + tickInterval
        while running.load(ordering: .acquiring) {
            let count = epoll_wait(epollFD, events, Int32(capacity), Self.waitMilliseconds(until: nextTick, now: Self.now()))
            if count > 0 {
                for index in 0..<Int(count) {
                    let fd = events[index].data.fd
                    if fd == wakeFD {
                        var value: UInt64 = 0
                        _ = read(wakeFD, &value, 8)
                        continue
                    }
                    handlers[fd]?.handle(events: events[index].events)
                }
            }
            drainInbox()
            let now = Self.now()
            if now >= nextTick {
                nextTick = now + tickInterval
                onTick?(now)
                drainInbox()  // what the tick handed itself, before waiting
            }
        }
        drainInbox()
    }

    /// Whether the caller runs on this loop's thread.
    var isCurrent: Bool { threadID.load(ordering: .relaxed) == UInt(pthread_self()) }

    private func drainInbox() {
        while true {
            let work = inbox.withLock { queue -> [() -> Void] in
                let taken = queue
                queue.removeAll(keepingCapacity: true)
                return taken
            }
            if work.isEmpty { return }
            for item in work { item() }
        }
    }
}

/// A request's task may prefer the loop that read the request (SE-0417): its jobs, and those of the
/// default actors it calls, then run on this thread between readiness events, and the answer is
/// written without waking another thread.
extension EventLoop: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        execute { [unowned self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}

/// epoll event bits (macros in C).
enum Epoll {
    static let `in` = diffstream_EPOLLIN()
    static let out = diffstream_EPOLLOUT()
    static let err = diffstream_EPOLLERR()
    static let hup = diffstream_EPOLLHUP()
    static let rdhup = diffstream_EPOLLRDHUP()
}
