import DiffStream
import DiffStreamJSON
import FeedCore
import ViewModelHosting

/// A blackjack hand. Each `deal` draws a card from a locally shuffled 52-card deck and appends it (one
/// insert); cards have their own identity (deck number, rank, suit), so two sevens are two items. Once
/// the score reaches 21 or more, the next deal starts a new hand from a new deck.
public struct BlackjackViewModel: HostedViewModel {
    public struct Card: Codable, Sendable, Equatable, Identifiable, WireItemConvertible {
        public var deck: Int
        public var rank: String
        public var suit: String
        public init(deck: Int, rank: String, suit: String) {
            self.deck = deck
            self.rank = rank
            self.suit = suit
        }
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

    public struct Hand: Identifiable, Equatable, WireSectionConvertible {
        public var id = "hand"
        var score: Int
        var remaining: Int
        var status: String
        public var wireSection: WireSection {
            WireSection(id: id, model: ["title": "Blackjack", "score": .number(Double(score)), "remaining": .number(Double(remaining)), "status": .string(status)])
        }
    }

    public struct State: Codable, Sendable, Equatable {
        public var deckNumber = 0
        public var deck: [Card] = []
        public var hand: [Card] = []

        public init() {}

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
                deck = BlackjackViewModel.suits.flatMap { suit in BlackjackViewModel.ranks.map { Card(deck: deckNumber, rank: $0, suit: suit) } }.shuffled(using: &generator)
                hand = []
            }
            hand.append(deck.removeLast())
        }
    }

    static let ranks = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
    static let suits = ["♠", "♥", "♦", "♣"]

    public init() {}

    /// The first card is already dealt.
    public var initialState: State {
        var state = State()
        var generator = SystemRandomNumberGenerator()
        state.deal(using: &generator)
        return state
    }

    public var actions: [HostedAction<State>] {
        [HostedAction("deal", isPublic: true) { state in
            var generator = SystemRandomNumberGenerator()
            state.deal(using: &generator)
        }]
    }

    public func render(_ state: State) throws -> Snapshot<Hand, Card> {
        try Snapshot {
            Section(Hand(score: state.score, remaining: state.deck.count, status: state.status)) { state.hand }
        }
    }
}
