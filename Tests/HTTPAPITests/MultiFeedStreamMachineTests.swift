import HTTPAPI
import HTTPCore
import Testing

/// The multi-feed stream's rules without sockets or sinks: inputs in, actions out.
struct MultiFeedStreamMachineTests {
    typealias Machine = MultiFeedStreamMachine

    /// The writes of `output` as text: a sent payload's bytes, `resume` for a resume.
    static func writes(_ output: Machine.Output) -> [String] {
        output.writes.map {
            switch $0 {
            case .send(let payload): String(decoding: payload.bytes, as: UTF8.self)
            case .resume(let payload): "resume" + String(decoding: payload.bytes, as: UTF8.self)
            }
        }
    }

    static func payload(_ text: String) -> EventPayload { EventPayload(text) }

    /// A machine with slots 1…`feeds.count` open on `feeds`, the opening finished.
    static func opened(_ feeds: [String]) -> Machine {
        var machine = Machine()
        for (index, feed) in feeds.enumerated() {
            let opened = machine.open(index + 1, feed: feed)
            #expect(opened)
        }
        let finished2 = machine.finishOpening()
        #expect(!finished2.endStream)
        return machine
    }

    /// What each input sends, in the order the inputs come: slots and the announcement interleaved.
    @Test func everyWriteGoesOutInTheOrderItsInputCame() {
        var machine = Machine()
        var sent: [String] = []
        let opened3 = machine.open(1, feed: "a")
        let opened4 = machine.open(2, feed: "b")
        #expect(opened3 && opened4)
        sent += Self.writes(machine.announce(Self.payload("announce")))
        sent += Self.writes(machine.send(Self.payload("b1"), from: 2))
        sent += Self.writes(machine.refuse(Self.payload("c refused")))
        sent += Self.writes(machine.send(Self.payload("a1"), from: 1))
        sent += Self.writes(machine.send(Self.payload("gone"), from: 9))  // no such slot
        sent += Self.writes(machine.resume(1, with: Self.payload("a snapshot")))
        #expect(sent == ["announce", "b1", "c refused", "a1", "a snapshot"])
        #expect(machine.openFeeds == ["a", "b"])
    }

    /// Slots 1 (a), 2 (b), 3 (c) send `sends` (slot numbers) in order, the connection drops the
    /// `overflowAt`th write (nil: it cannot tell) and every later one; when it drains, exactly the slots
    /// that lost an event resync.
    @Test(arguments: [
        ([1, 2, 3, 1], 4, [1]),  // only a's second batch was dropped
        ([1, 2, 3, 1], 2, [1, 2, 3]),
        ([1, 2, 3, 3], 3, [3]),
        ([1, 1, 2], nil, [1, 2]),  // a connection that cannot tell: every slot that sent since the last drain
        ([Int](), nil, [Int]()),
    ] as [([Int], Int?, [Int])])
    func aDrainResyncsExactlyTheSlotsThatLostEvents(sends: [Int], overflowAt: Int?, resynced: [Int]) {
        var machine = Self.opened(["a", "b", "c"])
        for slot in sends { _ = machine.send(Self.payload("event of \(slot)"), from: slot) }
        if let overflowAt { machine.overflowed(at: overflowAt) }
        let drained = machine.drained()
        #expect(drained.resync == resynced)
        #expect(Self.writes(drained) == ["resume"])
        // A resyncing slot drops what its feed sends until its snapshot; the others go on.
        for slot in 1...3 {
            let output = machine.send(Self.payload("next of \(slot)"), from: slot)
            #expect(Self.writes(output) == (resynced.contains(slot) ? [] : ["next of \(slot)"]))
        }
        for slot in resynced {
            let resumed5 = machine.resume(slot, with: Self.payload("snapshot of \(slot)"))
            #expect(Self.writes(resumed5) == ["snapshot of \(slot)"])
            let sent6 = machine.send(Self.payload("after"), from: slot)
            #expect(Self.writes(sent6) == ["after"])
        }
        machine.overflowed(at: 1000)  // after every event written so far
        let drain7 = machine.drained()
        #expect(drain7.resync.isEmpty, "nothing lost since: no resync")
    }

    /// A second overflow before the resync's snapshot arrives does not ask the same slot twice.
    @Test func aResyncingSlotIsNotAskedAgain() {
        var machine = Self.opened(["a"])
        _ = machine.send(Self.payload("a1"), from: 1)
        machine.overflowed(at: 1)
        let drain8 = machine.drained()
        #expect(drain8.resync == [1])
        machine.overflowed(at: 2)
        let drain9 = machine.drained()
        #expect(drain9.resync == [])
    }

    /// A slot whose feed ended (`deleted`) while it waited for its snapshot sends that event as it closes.
    @Test func aSlotClosedWhileResyncingSendsWhatEndedIt() {
        var machine = Self.opened(["a", "b"])
        _ = machine.send(Self.payload("a1"), from: 1)
        machine.overflowed(at: 1)
        let drain10 = machine.drained()
        #expect(drain10.resync == [1])
        let sent11 = machine.send(Self.payload("a deleted"), from: 1)
        #expect(Self.writes(sent11) == [])
        let closed = machine.close(1)
        #expect(Self.writes(closed) == ["a deleted"])
        #expect(closed.ended == [1])
        #expect(!closed.endStream, "b is still open")
        let sent12 = machine.send(Self.payload("b1"), from: 2)
        #expect(Self.writes(sent12) == ["b1"])
    }

    /// Refusals and closed slots' last events that the overflow dropped are sent again after the
    /// drain; those the connection wrote are not.
    @Test func droppedRefusalsAndEndsAreSentAgainAfterTheDrain() {
        var machine = Machine()
        let opened13 = machine.open(1, feed: "a")
        let opened14 = machine.open(2, feed: "b")
        #expect(opened13 && opened14)
        _ = machine.announce(Self.payload("announce"))  // 1
        _ = machine.refuse(Self.payload("x forbidden"))  // 2: written
        _ = machine.send(Self.payload("a1"), from: 1)  // 3: dropped
        _ = machine.refuse(Self.payload("y notfound"))  // 4: dropped
        _ = machine.send(Self.payload("b deleted"), from: 2)  // 5: dropped
        _ = machine.close(2)
        _ = machine.finishOpening()
        machine.overflowed(at: 3)
        let drained = machine.drained()
        #expect(Self.writes(drained) == ["resume", "y notfound", "b deleted"])
        #expect(drained.resync == [1])
        // Written this time: a later overflow and drain does not repeat them.
        _ = machine.resume(1, with: Self.payload("a snapshot"))
        machine.overflowed(at: 9)
        let drain15 = machine.drained()
        #expect(Self.writes(drain15) == ["resume"])
    }

    /// The last slot to close ends the stream, whose last events are the ends the connection dropped.
    @Test func theStreamEndsWithTheLastEventsItDropped() {
        var machine = Self.opened(["a", "b"])
        _ = machine.refuse(Self.payload("c notfound"))  // 1: written
        _ = machine.send(Self.payload("a deleted"), from: 1)  // 2: dropped
        let closing16 = machine.close(1)
        #expect(!closing16.endStream)
        _ = machine.send(Self.payload("b deleted"), from: 2)  // 3: dropped
        let last = machine.close(2)
        #expect(last.endStream && last.ended == [2])
        #expect(machine.lastEvents() == nil, "the connection has not said what it dropped: it wrote everything")
        machine.overflowed(at: 2)
        #expect(machine.lastEvents(then: Self.payload("extra")).map { String(decoding: $0.bytes, as: UTF8.self) } == "a deletedb deletedextra")
    }

    /// A token that expired: every open slot's last event, in the order the slots were opened.
    @Test func anExpiryEndsWithEveryOpenFeedInOrder() {
        var machine = Self.opened(["b", "a", "c"])
        _ = machine.close(3)
        #expect(machine.lastEventsOfOpenSlots { Self.payload("\($0) expired;") }.map { String(decoding: $0.bytes, as: UTF8.self) } == "b expired;a expired;")
        _ = machine.terminated()
        #expect(machine.lastEventsOfOpenSlots { Self.payload($0) } == nil, "the connection ended: nothing to write")
    }

    /// Until the opening is finished, no slot left does not end the stream; after it, none left ends it.
    @Test(arguments: [true, false])
    func noSlotLeftEndsTheStreamOnlyAfterTheOpening(closeFirst: Bool) {
        var machine = Machine()
        let opened17 = machine.open(1, feed: "a")
        #expect(opened17)
        if closeFirst {
            let closing18 = machine.close(1)
            #expect(!closing18.endStream)
            let finished19 = machine.finishOpening()
            #expect(finished19.endStream)
        } else {
            let finished20 = machine.finishOpening()
            #expect(!finished20.endStream)
            let closing21 = machine.close(1)
            #expect(closing21.endStream)
        }
    }

    /// The connection ended: every slot ends, nothing more is written, and a slot opened later is born ended.
    @Test func slotsOpenedAfterTheConnectionEndedAreBornEnded() {
        var machine = Machine()
        let opened22 = machine.open(1, feed: "a")
        let opened23 = machine.open(2, feed: "b")
        #expect(opened22 && opened23)
        let terminated = machine.terminated()
        #expect(terminated.ended == [1, 2])
        #expect(machine.ended)
        let opened24 = machine.open(3, feed: "c")
        #expect(!opened24)
        #expect(machine.openFeeds.isEmpty)
        let sent25 = machine.send(Self.payload("x"), from: 3)
        #expect(Self.writes(sent25).isEmpty)
        let announced26 = machine.announce(Self.payload("x"))
        #expect(Self.writes(announced26).isEmpty)
        let refused27 = machine.refuse(Self.payload("x"))
        #expect(Self.writes(refused27).isEmpty)
        let closing28 = machine.close(1)
        #expect(closing28.ended.isEmpty)
        let finished29 = machine.finishOpening()
        #expect(!finished29.endStream, "it has ended already")
    }
}
