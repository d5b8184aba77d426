/// Why a request was refused before it reached a handler, with the status to answer.
public struct HTTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public var status: HTTPStatus
    public var detail: String

    public init(_ status: HTTPStatus, _ detail: String) {
        self.status = status
        self.detail = detail
    }

    public var errorDescription: String? { "\(status): \(detail)" }
    public var description: String { errorDescription ?? detail }
}
