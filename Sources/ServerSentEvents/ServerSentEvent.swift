/// Server-sent event framing (WHATWG HTML, "Server-sent events", §9.2.6 interpreting an event stream).
public enum ServerSentEvent {
    /// Encodes one event. `data` may hold newlines: each line becomes its own `data:` field, which the
    /// client joins back with `\n`. `event` and `id` must not contain CR or LF (they are removed), and
    /// `id` must not contain NUL (the client would ignore it).
    public static func encode(event: String?, id: String?, data: some Collection<UInt8>, retry: Int? = nil) -> [UInt8] {
        encode(event: event, id: id, data: Array(data), retry: retry)
    }

    /// ``encode(event:id:data:retry:)`` for bytes in an array: the form the feeds use, specialised,
    /// copying the runs between line breaks whole (a generic loop over a collection from another
    /// module went byte by byte through witness tables, 7% of a publish's CPU).
    /// - Complexity: O(n) in the size of `data`.
    public static func encode(event: String?, id: String?, data: [UInt8], retry: Int? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count + 80)
        if let retry { bytes.append(contentsOf: "retry: \(retry)\n".utf8) }
        if let event { appendField("event: ", event, removingNUL: false, to: &bytes) }
        if let id { appendField("id: ", id, removingNUL: true, to: &bytes) }
        bytes.append(contentsOf: "data: ".utf8)
        data.withUnsafeBufferPointer { data in
            var start = 0, index = 0
            while index < data.count {
                let byte = data[index]
                guard byte == 0x0A || byte == 0x0D else { index += 1; continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: data[start..<index]))
                bytes.append(contentsOf: "\ndata: ".utf8)
                // CR LF is one line break (WHATWG HTML §9.2.6).
                index += byte == 0x0D && index + 1 < data.count && data[index + 1] == 0x0A ? 2 : 1
                start = index
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: data[start..<data.count]))
        }
        bytes.append(contentsOf: "\n\n".utf8)
        return bytes
    }

    /// A comment line (ignored by clients; keeps proxies and idle timers from closing the stream).
    public static func comment(_ text: String) -> [UInt8] {
        Array(": \(sanitized(text))\n\n".utf8)
    }

    /// A `retry:` field on its own, telling the client how long to wait before reconnecting.
    public static func retry(milliseconds: Int) -> [UInt8] {
        Array("retry: \(milliseconds)\n\n".utf8)
    }

    /// `name`, `value` without CR and LF (and NUL when `removingNUL`), and a line feed, appended byte by
    /// byte from the value's UTF-8: on every batch's path, so no intermediate `String` is made.
    @inline(__always)
    private static func appendField(_ name: StaticString, _ value: String, removingNUL: Bool, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        var value = value
        value.withUTF8 { utf8 in
            for byte in utf8 where byte != 0x0A && byte != 0x0D && !(removingNUL && byte == 0) { bytes.append(byte) }
        }
        bytes.append(0x0A)
    }

    package static func sanitized(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0 != "\n" && $0 != "\r" })
    }
}
