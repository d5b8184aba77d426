// Support: what docs/client-swift.md's snippets take for granted (the app's own types, values and
// functions). WeekSection and Day are the week list's (WeekViewModel.swift).
import DiffStreamClient
import Foundation

let token: String? = nil

func show(_ update: FeedUpdate<WeekSection, Day>) {}
func showPlaceholder() {}
func signIn(_ detail: String) {}
func markStale(_ detail: String) {}
func clearStaleMark() {}

func show(_ snapshot: Snapshot<HomeSection, HomeItem>, undecodable: [UndecodableElement]) {}

struct Room: Identifiable, Hashable, Decodable, Sendable { var id: String }
struct Message: Identifiable, Hashable, Decodable, Sendable { var id: String }
func show(_ snapshot: Snapshot<Room, Message>, in feed: String) {}
func record(_ event: WireFeedEvent) {}

/// The app's sign-in session (Tokens.swift).
struct Session: Sendable {
    var token: String?
    func refresh() async throws -> String { "a fresh token" }
}
