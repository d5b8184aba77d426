import Testing
@testable import Redis

struct PubSubLivenessTests {
    enum Event: Sendable, CustomStringConvertible {
        case heard(Double)
        case step(Double, PubSubLiveness.Step)
        var description: String {
            switch self {
            case .heard(let at): "heard at \(at)"
            case .step(let at, let step): "step at \(at) → \(step)"
            }
        }
    }

    /// Sequences of reads and steps (interval 1 s, timeout 2 s, made at 0 with a `PING` on its way),
    /// each step checked against what it must say.
    static let scripts: [(String, [Event])] = [
        ("the first PING unanswered is death at the timeout",
         [.step(0, .wait(seconds: 2)), .step(1.5, .wait(seconds: 0.5)), .step(2, .dead)]),
        ("answered, then a PING after each interval of silence",
         [.heard(0.1), .step(0.1, .wait(seconds: 1)), .step(1.1, .ping), .step(1.1, .wait(seconds: 2)), .heard(1.2), .step(2.2, .ping)]),
        ("messages keep it alive without a PING",
         [.heard(0.5), .heard(1.4), .step(2.3, .wait(seconds: 0.1)), .heard(2.3), .step(3.2, .wait(seconds: 0.1))]),
        ("a PING unanswered after silence is death",
         [.heard(0), .step(1, .ping), .step(2.9, .wait(seconds: 0.1)), .step(3, .dead)]),
        ("a late step after long silence pings rather than declaring death",
         [.heard(0), .step(50, .ping), .step(51, .wait(seconds: 1))]),
    ]

    @Test(arguments: scripts)
    func stepsFollowTheScript(name: String, events: [Event]) {
        var liveness = PubSubLiveness(now: 0, pingInterval: 1, timeout: 2)
        for event in events {
            switch event {
            case .heard(let at): liveness.heard(at: at)
            case .step(let at, let expected):
                let step = liveness.step(at: at)
                switch (step, expected) {
                case (.wait(let got), .wait(let want)): #expect(abs(got - want) < 1e-9, "\(name): \(event)")
                default: #expect(step == expected, "\(name): \(event)")
                }
            }
        }
    }
}
