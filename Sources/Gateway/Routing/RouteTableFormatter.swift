/// The text table `moya-gateway routes` prints: one line per route in precedence order.
package enum RouteTableFormatter {
    package static let columns = ["#", "NAME", "MATCH", "HOST", "METHODS", "UPSTREAM", "REWRITE", "FLAGS"]

    /// Rows of cells, without the header.
    package static func rows(_ table: RouteTable) -> [[String]] {
        table.routes.enumerated().map { position, route in
            let config = route.config
            var rewrite: [String] = []
            if let strip = config.rewrite?.stripPrefix { rewrite.append("strip \(strip)") }
            if let add = config.rewrite?.addPrefix { rewrite.append("add \(add)") }
            var flags: [String] = []
            if route.upstream.isStub { flags.append("stub") }
            if config.coalesce {
                flags.append(
                    config.coalesceVary.isEmpty
                        ? "coalesce" : "coalesce(vary: \(config.coalesceVary.joined(separator: ",")))")
            }
            if config.websocket {
                flags.append(
                    config.websocketIdleTimeout.map { "websocket(idle \($0.configDescription))" } ?? "websocket")
            }
            if let clients = config.clients { flags.append("clients: \(clients.joined(separator: ","))") }
            if let timeout = config.timeout { flags.append("timeout \(timeout.configDescription)") }
            if let retries = config.retries { flags.append("attempts \(retries.attempts)") }
            if let limit = config.maxBodyBytes { flags.append("max_body \(ConfigValue.sizeDescription(limit))") }
            if route.upstream.pool.maxRequestsPerConnection > 0 {
                flags.append("upstream_requests_per_connection \(route.upstream.pool.maxRequestsPerConnection)")
            }
            if route.upstream.oauth2 != nil { flags.append("oauth2") }
            let servers = route.upstream.servers.map { " via " + $0.map(\.description).joined(separator: ",") } ?? ""
            let upstream =
                route.upstream.baseURL.map { "\(route.upstream.name) (\($0)\(servers))" }
                ?? route.upstream.name
            return [
                String(position + 1), config.name, route.matchDescription, config.match.host ?? "*",
                route.allowedMethods?.joined(separator: ",") ?? "*", upstream,
                rewrite.isEmpty ? "-" : rewrite.joined(separator: ", "),
                flags.isEmpty ? "-" : flags.joined(separator: " ")
            ]
        }
    }

    /// The aligned table with a header line; ends with a newline.
    package static func format(_ table: RouteTable) -> String {
        let all = [columns] + rows(table)
        var widths = Array(repeating: 0, count: columns.count)
        for row in all {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        var output = ""
        for row in all {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
            }
            output += cells.joined(separator: "  ") + "\n"
        }
        return output
    }
}
