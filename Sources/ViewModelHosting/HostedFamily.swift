import CoreMetrics
import DiffStreamJSON
import FeedCore
import FeedReplication
import FeedStorage
import Foundation
import Synchronization

/// A family, whatever its view model's type: what hosting and the HTTP API need.
package protocol HostedFamily: Sendable {
    var prefix: String { get }
    var limits: FamilyLimits { get }
    var actionList: [ActionDescription] { get }
    /// Whether its view model takes `PATCH` (``HostedViewModel/acceptsPatch``): the route is found; a
    /// member whose family's ``truth`` is ``FamilyTruth/program`` still refuses it (409).
    var acceptsPatch: Bool { get }
    /// Whether each member has a presence feed (``HostedViewModel/presence``).
    var presence: HostedPresence { get }
    /// Where a member's state comes from when it is made again.
    var truth: FamilyTruth { get }
    /// The live member `key`, made if need be (a use).
    func use(_ key: String) async throws(ViewModelError) -> any HostedFeed
    func joined(_ key: String) async
    func left(_ key: String) async
    var liveCount: Int { get async }
    func stop() async
}

extension ViewModelFamily: HostedFamily {
    package nonisolated var actionList: [ActionDescription] {
        model.actions.map { ActionDescription(name: $0.name, fields: $0.fields, isPublic: $0.isPublic) }
    }
    package nonisolated var acceptsPatch: Bool { model.acceptsPatch }
    package nonisolated var presence: HostedPresence { model.presence }
    package func use(_ key: String) async throws(ViewModelError) -> any HostedFeed {
        try await member(key)
    }
}

/// A member of a family as the HTTP API sees it before it is made: its actions and `PATCH` come from
/// the family's view model; taking one makes the member first (a use).
package struct FamilyMemberFeed: HostedFeed {
    package let name: String
    let key: String
    let family: any HostedFamily

    package init(name: String, key: String, family: any HostedFamily) {
        self.name = name
        self.key = key
        self.family = family
    }

    package var actionList: [ActionDescription] { family.actionList }
    package var acceptsPatch: Bool { family.acceptsPatch }
    package var presence: HostedPresence { family.presence }

    package func perform(_ actionName: String, body: [UInt8], writeID: String?) async throws(ViewModelError) -> FeedWriteResult {
        try await family.use(key).perform(actionName, body: body, writeID: writeID)
    }

    package func patch(body: [UInt8], writeID: String?) async throws(ViewModelError) -> FeedWriteResult {
        try await family.use(key).patch(body: body, writeID: writeID)
    }
}
