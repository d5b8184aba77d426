import Testing
import FeedCore
import ViewModelHosting

/// The pure shard logic of families on a shared store (decision 0008): which shard a key is in, and what
/// an instance does on a renewal.
struct FamilyShardsTests {
    /// FNV-1a (64 bits) of the key modulo the count: the published test vectors ("" and "a", "foobar")
    /// and the example users, the same on every platform and run.
    @Test(arguments: [
        ("", 64, 37), ("a", 64, 12), ("foobar", 64, 40), ("alice", 64, 7), ("bob", 64, 20), ("carol", 64, 50),
        ("", 10, 7), ("a", 10, 6), ("alice", 10, 3), ("u09999", 10, 4), ("alice", 1, 0), ("u09999", 1, 0),
    ])
    func aKeysShardIsItsFNV1aHashModuloTheCount(key: String, count: Int, shard: Int) {
        #expect(FamilyShards(count: count).shard(of: key) == shard)
    }

    @Test func namesOfLeasesAndSetsAreNoFeedNames() {
        #expect(FamilyShards.leaseName(family: "home", shard: 7) == "family:home:7")
        #expect(FamilyShards.interestSet(family: "home", shard: 7) == "home:7")
        #expect(!FeedID.isValid(FamilyShards.leaseName(family: "home", shard: 7)))
    }

    /// Each instance's entries name it, so that an instance tells the keys live elsewhere from its own.
    @Test(arguments: [
        ([], "me", []),
        (["alice me", "bob me"], "me", []),
        (["alice me", "alice you", "bob them", "carol you"], "me", ["alice", "bob", "carol"]),
        (["alice you", "alice them"], "me", ["alice"]),
        (["malformed", "dan me-too"], "me", ["dan"]),
    ] as [([String], String, [String])])
    func keysLiveElsewhereAreThoseOtherInstancesRecorded(entries: [String], instance: String, keys: [String]) {
        #expect(FamilyShards.keysLiveElsewhere(entries, instance: instance) == keys)
    }

    @Test func anEntryIsTheKeyThenTheInstance() {
        #expect(FamilyShards.interestEntry(key: "alice", instance: "0f3a") == "alice 0f3a")
    }

    @Test func keysAreGroupedByShard() {
        let shards = FamilyShards(count: 10)
        #expect(shards.group(["alice", "a", "bob", "carol", "u09999"]) == [3: ["alice"], 6: ["a"], 2: ["bob", "carol"], 4: ["u09999"]])
        #expect(shards.group([String]()).isEmpty)
    }

    /// With 10 shards: alice is in 3, bob and carol in 2, u09999 in 4, a in 6.
    @Test(arguments: [
        // Nothing held: keep (try to take) the shards of the keys live here; make nothing.
        (["alice", "bob"], [], [:], [], [2, 3]),
        // Held, with keys live elsewhere (interest: another instance's): make those, keep the shard even with nothing live here.
        ([], [2], [2: ["bob", "carol"]], ["bob", "carol"], [2]),
        // Held, its keys all live here: nothing to make.
        (["bob"], [2], [2: ["bob"]], [], [2]),
        // Held, no key live anywhere (interest ran out): give it up.
        ([], [2], [2: []], [], []),
        // Held, a key of another shard in its set is not this shard's: not made.
        (["alice"], [2, 3], [2: ["carol", "u09999"], 3: ["alice"]], ["carol"], [2, 3]),
        // Held shard without interest read: only the live keys' shards are kept.
        (["u09999"], [2], [:], [], [4]),
    ] as [([String], [Int], [Int: [String]], [String], [Int])])
    func aRenewalMakesLiveTheKeysOfHeldShardsAndKeepsWhatIsNeeded(live: [String], held: [Int], interest: [Int: [String]], make: [String], keep: [Int]) {
        let duty = FamilyShards(count: 10).duty(live: Set(live), held: Set(held), interest: interest)
        #expect(duty.make == make)
        #expect(duty.keep == Set(keep))
    }
}
