/// Generated stub bodies for `body_bytes`.
enum StubBody {
    /// `count` bytes of a repeating printable pattern.
    static func generate(count: Int) -> [UInt8] {
        let pattern = Array("moya-gateway stub body 0123456789abcdefghijklmnopqrstuvwxyz\n".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(max(0, count))
        var index = 0
        while bytes.count < count {
            bytes.append(pattern[index])
            index = (index + 1) % pattern.count
        }
        return bytes
    }
}
