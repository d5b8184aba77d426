import DiffStream
import DiffStreamJSON

/// A blackjack hand. Each deal draws a card from a locally shuffled 52-card deck and appends it (one
/// insert); cards have their own identity (deck number, rank, suit), so two sevens are two items. Once
/// the score reaches 21 or more, the next deal starts a new hand from a new deck.
public struct BlackjackViewModel: Sendable, Equatable {
    public struct Card: Sendable, Equatable, Identifiable, WireItemConvertible {
        public var deck: Int
        public var rank: String
        public var suit: String
        public var id: String { "card-\(deck)-\(rank)\(suit)" }
        public var value: Int {
            switch rank {
            case "A": 11
            case "K", "Q", "J": 10
            default: Int(rank) ?? 0
            }
        }
        public var wireItem: WireItem {
            WireItem(id: id, kind: "card", model: ["rank": .string(rank), "suit": .string(suit), "value": .number(Double(value))])
        }
    }

    struct Hand: Identifiable, Equatable, WireSectionConvertible {
        var id = "hand"
        var score: Int
        var remaining: Int
        var status: String
        var wireSection: WireSection {
            WireSection(id: id, model: ["title": "Blackjack", "score": .number(Double(score)), "remaining": .number(Double(remaining)), "status": .string(status)])
        }
    }

    public private(set) var deckNumber = 0
    public private(set) var deck: [Card] = []
    public private(set) var hand: [Card] = []

    public init() {}

    static let ranks = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
    static let suits = ["♠", "♥", "♦", "♣"]

    /// The hand's best score: aces count 11 unless that busts, then 1.
    public var score: Int {
        var total = hand.reduce(0) { $0 + $1.value }
        var aces = hand.filter { $0.rank == "A" }.count
        while total > 21 && aces > 0 {
            total -= 10
            aces -= 1
        }
        return total
    }

    public var status: String {
        if hand.isEmpty { return "ready" }
        if score > 21 { return "bust" }
        if score == 21 { return "blackjack" }
        return "playing"
    }

    /// Draws one card; starts a new hand from a new deck first if the hand is over (21 or more).
    public mutating func deal(using generator: inout some RandomNumberGenerator) {
        if deck.isEmpty || score >= 21 {
            deckNumber += 1
            deck = Self.suits.flatMap { suit in Self.ranks.map { Card(deck: deckNumber, rank: $0, suit: suit) } }.shuffled(using: &generator)
            hand = []
        }
        hand.append(deck.removeLast())
    }

    public func render() throws -> WireSnapshot {
        try Snapshot<Hand, Card> {
            Section(Hand(score: score, remaining: deck.count, status: status)) { hand }
        }.wireSnapshot()
    }
}
