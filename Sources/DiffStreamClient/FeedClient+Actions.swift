import DiffStreamJSON
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an action's `200` says: the version the action's change produced and the size of its batch.
public struct ActionResult: Equatable, Sendable, Decodable {
    public var feed: String
    public var version: Int
    /// The number of operations; `0` when the snapshot came out the same (no new version).
    public var ops: Int
}

/// Why an action failed.
public enum ActionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `422`: the input was refused. `field` names it (`title`, `suggested[2].type`) when the server
    /// said which (`invalid field`); `reason` is what is wrong with it.
    case invalidInput(field: String?, reason: String, problem: FeedProblem)
    /// `401`: no token, or an invalid one.
    case unauthorized(FeedProblem)
    /// `403`: the token may not write the feed.
    case forbidden(FeedProblem)
    /// `404`: no such feed or action.
    case notFound(FeedProblem)
    /// Any other status.
    case refused(FeedProblem)
    /// No answer: the server could not be reached.
    case unreachable(String)
    /// The input could not be encoded, or the answer not read.
    case encoding(String)

    public var description: String {
        switch self {
        case .invalidInput(let field, let reason, _): field.map { "\($0): \(reason)" } ?? reason
        case .unauthorized(let problem), .forbidden(let problem), .notFound(let problem), .refused(let problem): problem.description
        case .unreachable(let reason): "unreachable: \(reason)"
        case .encoding(let reason): reason
        }
    }
}

extension FeedClient {
    /// Runs a hosted view model's action: `POST /feeds/{feed}/actions/{action}` with `input` as JSON.
    ///
    /// ```swift
    /// try await client.perform("toggle", on: "todo", input: Toggle(id: "t3"))
    /// ```
    /// - Throws: ``ActionError``; a `422` is ``ActionError/invalidInput(field:reason:problem:)``.
    @discardableResult
    public func perform(_ action: String, on feed: String, input: some Encodable & Sendable) async throws(ActionError) -> ActionResult {
        let body: Data
        do { body = try JSONEncoder().encode(input) } catch { throw .encoding("the input does not encode: \(error)") }
        guard let url = url(path: "/feeds/\(Self.percentEncode(feed))/actions/\(Self.percentEncode(action))") else {
            throw .encoding("not a valid URL for feed \(feed), action \(action)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (status, data) = try await send(request)
        if status == 200 {
            do { return try JSONDecoder().decode(ActionResult.self, from: data) } catch { throw .encoding("an unreadable answer: \(error)") }
        }
        throw Self.actionError(status: status, body: [UInt8](data), feed: feed)
    }

    /// Runs an action that takes no input (`{}`).
    @discardableResult
    public func perform(_ action: String, on feed: String) async throws(ActionError) -> ActionResult {
        try await perform(action, on: feed, input: [String: String]())
    }

    /// The error for a refused action's status and body (`{"error","detail"}`; a `422 invalid field`
    /// detail reads `FIELD: REASON`).
    static func actionError(status: Int, body: [UInt8], feed: String) -> ActionError {
        let value = (try? JSONParser.parse(body)) ?? .null
        let error = value["error"]?.stringValue ?? "HTTP \(status)"
        let detail = value["detail"]?.stringValue ?? String(decoding: body.prefix(200), as: UTF8.self)
        let problem = FeedProblem(feed: feed, status: status, error: error, detail: detail)
        switch status {
        case 422:
            if let field = value["field"]?.stringValue { return .invalidInput(field: field, reason: detail, problem: problem) }
            if error == "invalid field", let colon = detail.range(of: ": ") {
                return .invalidInput(field: String(detail[..<colon.lowerBound]), reason: String(detail[colon.upperBound...]), problem: problem)
            }
            return .invalidInput(field: nil, reason: detail, problem: problem)
        case 401: return .unauthorized(problem)
        case 403: return .forbidden(problem)
        case 404: return .notFound(problem)
        default: return .refused(problem)
        }
    }

    /// One request and its whole answer (a completion handler: it works alike on Linux and Apple platforms).
    func send(_ request: URLRequest) async throws(ActionError) -> (Int, Data) {
        let session = URLSession(configuration: sessionConfiguration)
        defer { session.finishTasksAndInvalidate() }
        let result: Result<(Int, Data), ActionError> = await withCheckedContinuation { continuation in
            let task = session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(returning: .failure(.unreachable((error as NSError).localizedDescription)))
                } else {
                    continuation.resume(returning: .success(((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data())))
                }
            }
            task.resume()
        }
        return try result.get()
    }
}
