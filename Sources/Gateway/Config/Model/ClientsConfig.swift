/// `clients`: who may call the gateway.
package struct ClientsConfig: Sendable, Equatable {
    package var apiKeys: APIKeysConfig?

    package init(apiKeys: APIKeysConfig? = nil) { self.apiKeys = apiKeys }
}

/// `clients.api_keys`: callers named by the key they send in a header.
package struct APIKeysConfig: Sendable, Equatable {
    package struct Client: Sendable, Equatable {
        package var name: String
        package var key: Secret

        package init(name: String, key: Secret) {
            self.name = name
            self.key = key
        }
    }

    /// The request header that carries the key. Default `X-Api-Key`.
    package var header: String = "X-Api-Key"
    /// Clients in declaration order; names and keys are unique.
    package var keys: [Client] = []

    package init(header: String = "X-Api-Key", keys: [Client] = []) {
        self.header = header
        self.keys = keys
    }

    /// The client whose key is `key`, compared in constant time per key.
    package func client(forKey key: String) -> Client? {
        var found: Client?
        for client in keys where constantTimeEquals(client.key.value, key) { found = client }
        return found
    }
}

/// Compares two strings without an early exit on the first differing byte.
func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    let a = Array(lhs.utf8)
    let b = Array(rhs.utf8)
    var difference: UInt8 = a.count == b.count ? 0 : 1
    let n = max(a.count, b.count)
    var index = 0
    while index < n {
        let x = index < a.count ? a[index] : 0
        let y = index < b.count ? b[index] : 0
        difference |= x ^ y
        index += 1
    }
    return difference == 0
}
