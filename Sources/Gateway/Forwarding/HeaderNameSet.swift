/// A fixed set of header names with an ASCII case-insensitive `contains` that costs one array index for most names:
/// the names are kept by their length, so a field is compared only with the set's names of its own length.
struct HeaderNameSet: Sendable {
    /// `byLength[n]`: the lower-cased UTF-8 bytes of the names `n` bytes long.
    private let byLength: [[[UInt8]]]

    init(_ names: [String]) {
        let longest = names.map(\.utf8.count).max() ?? 0
        var byLength = [[[UInt8]]](repeating: [], count: longest + 1)
        for name in names {
            byLength[name.utf8.count].append(name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 })
        }
        self.byLength = byLength
    }

    /// Whether `name` is in the set, ignoring ASCII case.
    func contains(_ name: String) -> Bool {
        let length = name.utf8.count
        guard length < byLength.count, !byLength[length].isEmpty else { return false }
        let candidates = byLength[length]
        if let found = name.utf8.withContiguousStorageIfAvailable({ contains($0, among: candidates) }) { return found }
        return Array(name.utf8).withUnsafeBufferPointer { contains($0, among: candidates) }
    }

    /// Whether the name `bytes` spell is in the set, ignoring ASCII case.
    func contains(bytes: UnsafeRawBufferPointer) -> Bool {
        let length = bytes.count
        guard length < byLength.count, !byLength[length].isEmpty else { return false }
        return contains(bytes.assumingMemoryBound(to: UInt8.self), among: byLength[length])
    }

    private func contains(_ bytes: UnsafeBufferPointer<UInt8>, among candidates: [[UInt8]]) -> Bool {
        candidates.contains { candidate in
            for index in 0..<bytes.count {
                let byte = bytes[index]
                if (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) != candidate[index] { return false }
            }
            return true
        }
    }
}
