import Foundation

/// Whether a bind address only accepts connections from this machine.
enum BindAddress {
    static func isLoopback(_ host: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            let bytes = withUnsafeBytes(of: v6) { Array($0) }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }               // ::1
            if bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] { return bytes[12] == 127 }  // ::ffff:127.x
            return false
        }
        return host == "localhost"
    }
}
