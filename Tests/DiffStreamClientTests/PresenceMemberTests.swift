import DiffStreamClient
import Foundation
import Testing

struct PresenceMemberTests {
    @Test func aPresenceFeedsItemAndSectionDecode() throws {
        let item = #"{"id":"3f0c9a1be27d44c05a9e81f2","kind":"presence","model":{"connections":2,"metas":[],"name":"Alice","since":1764658000,"sub":"alice@example.com"}}"#
        let member = try JSONDecoder().decode(PresenceMember.self, from: Data(item.utf8))
        #expect(member.id == "3f0c9a1be27d44c05a9e81f2" && member.name == "Alice" && member.subject == "alice@example.com")
        #expect(member.connections == 2 && member.since == 1_764_658_000)
        let anonymous = try JSONDecoder().decode(PresenceMember.self, from: Data(#"{"id":"a","kind":"presence","model":{"connections":1,"metas":[],"since":1}}"#.utf8))
        #expect(anonymous.name == nil && anonymous.subject == nil)
        let section = try JSONDecoder().decode(PresenceSummary.self, from: Data(#"{"id":"present","model":{"count":130,"listed":100}}"#.utf8))
        #expect(section.count == 130 && section.listed == 100)
    }
}
