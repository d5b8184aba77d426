/// Files served beside the API (the page): `nil` when there is no file at the request's path.
public protocol StaticContent: Sendable {
    func response(for request: HTTPRequest, compression: Bool) -> HTTPResponse?
}
