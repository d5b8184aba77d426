import FeedCore
import DiffStreamJSON
import Foundation

/// Request bodies to typed values for hosted view models: action inputs and merge patches. Malformed
/// JSON is ``ViewModelError/malformedJSON(_:)``; a value of the wrong shape is
/// ``ViewModelError/invalidField(field:reason:)`` naming the field, e.g. `suggested[2].type`.
package enum ActionInput {
    /// Parses a body that must be a JSON object (an empty body counts as `{}`) whose keys are all
    /// declared in `fields`.
    package static func object(_ body: [UInt8], fields: [ActionField]) throws(ViewModelError) -> JSONObject {
        let value: JSONValue
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            value = .object(JSONObject())
        } else {
            do { value = try JSONParser.parse(body) } catch { throw .malformedJSON(error.description) }
        }
        guard case .object(let object) = value else {
            throw .invalidBody("the body must be a JSON object, not \(value.typeName)")
        }
        let declared = fields.map(\.name)
        for key in object.keys where !declared.contains(key) {
            let expected = declared.isEmpty ? "this action takes no fields" : "expected \(declared.joined(separator: ", "))"
            throw .invalidField(field: key, reason: "unknown field (\(expected))")
        }
        return object
    }

    /// Decodes the body into `Input`, naming the field that does not fit.
    package static func decode<Input: Decodable>(_ type: Input.Type, from body: [UInt8], fields: [ActionField]) throws(ViewModelError) -> Input {
        let object = try self.object(body, fields: fields)
        return try decode(type, from: .object(object))
    }

    /// Decodes a JSON value into `Value` with `JSONDecoder`; a decoding error names its coding path.
    package static func decode<Value: Decodable>(_ type: Value.Type, from value: JSONValue) throws(ViewModelError) -> Value {
        var writer = JSONWriter()
        writer.write(value)
        do {
            return try JSONDecoder().decode(Value.self, from: Data(writer.bytes))
        } catch let error as DecodingError {
            throw describe(error)
        } catch {
            throw .invalidBody("\(error)")
        }
    }

    /// The state as a JSON value (for merging a patch into it).
    package static func encode<Value: Encodable>(_ value: Value) throws(ViewModelError) -> JSONValue {
        do {
            let data = try JSONEncoder().encode(value)
            return try JSONParser.parse(Array(data))
        } catch {
            throw .stateNotEncodable("\(error)")
        }
    }

    /// RFC 7396 JSON merge patch: objects merge member by member, `null` removes a member, anything
    /// else replaces the target.
    /// - Complexity: O(size of the patch × members of the objects it touches).
    package static func merge(_ patch: JSONValue, into target: JSONValue) -> JSONValue {
        guard case .object(let members) = patch else { return patch }
        var result: [(key: String, value: JSONValue)] = target.objectValue?.members ?? []
        for (key, value) in members {
            let index = result.firstIndex { $0.key == key }
            if value.isNull {
                if let index { result.remove(at: index) }
            } else if let index {
                result[index].value = merge(value, into: result[index].value)
            } else {
                result.append((key, merge(value, into: .null)))
            }
        }
        return .object(JSONObject(result))
    }

    /// The first place where `patch` sets something that the decoded state does not have: a field
    /// the state's type does not know (decoding ignores unknown keys, so they are found this way).
    package static func unknownField(in patch: JSONValue, decoded: JSONValue, path: String = "") -> String? {
        switch (patch, decoded) {
        case (.object(let members), .object(let known)):
            for (key, value) in members where !value.isNull {
                let field = path.isEmpty ? key : "\(path).\(key)"
                guard let match = known[key] else { return field }
                if let found = unknownField(in: value, decoded: match, path: field) { return found }
            }
        case (.array(let elements), .array(let known)) where elements.count == known.count:
            for (index, (element, match)) in zip(elements, known).enumerated() {
                if let found = unknownField(in: element, decoded: match, path: "\(path)[\(index)]") { return found }
            }
        default:
            break
        }
        return nil
    }

    /// `suggested[2].type: expected a string`.
    package static func describe(_ error: DecodingError) -> ViewModelError {
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue, key.stringValue.hasPrefix("Index ") {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
                }
            }
            return text.isEmpty ? "body" : text
        }
        switch error {
        case .typeMismatch(let type, let context):
            return .invalidField(field: path(context.codingPath), reason: "expected \(describe(type))")
        case .valueNotFound(let type, let context):
            return .invalidField(field: path(context.codingPath), reason: "expected \(describe(type)), not null")
        case .keyNotFound(let key, let context):
            return .invalidField(field: path(context.codingPath + [key]), reason: "missing")
        case .dataCorrupted(let context):
            return .invalidField(field: path(context.codingPath), reason: context.debugDescription)
        @unknown default:
            return .invalidBody("\(error)")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type: "a whole number"
        case is Double.Type, is Float.Type: "a number"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : (String(describing: type).hasPrefix("Dictionary") ? "an object" : "a \(type)")
        }
    }
}
