// docs/client-swift.md, "Tokens", verbatim, as the body of a function (Support.swift: Session).
import DiffStreamClient
import Foundation

func follow(_ url: URL, as session: Session) {
let client = FeedClient(baseURL: url, token: session.token) { problem in
    try? await session.refresh()   // nil: stop following
}
_ = client
}
