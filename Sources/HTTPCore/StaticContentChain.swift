/// Several sources of files, asked in order: the first that has the request's file answers.
public struct StaticContentChain: StaticContent {
    public let sources: [any StaticContent]

    public init(_ sources: [any StaticContent]) { self.sources = sources }

    public func response(for request: HTTPRequest, compression: Bool) -> HTTPResponse? {
        for source in sources {
            if let response = source.response(for: request, compression: compression) { return response }
        }
        return nil
    }
}
