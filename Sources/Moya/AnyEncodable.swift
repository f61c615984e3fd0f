import Foundation

/// Type-erases an `Encodable` so it can be handed to `JSONEncoder.encode(_:)`.
struct AnyEncodable: Encodable {

    private let encodable: Encodable

    public init(_ encodable: Encodable) {
        self.encodable = encodable
    }

    func encode(to encoder: Encoder) throws {
        try encodable.encode(to: encoder)
    }
}
