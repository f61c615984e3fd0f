import Foundation
import HTTPServerCore
import HTTPWire
import NetCore

/// A loopback stand-in for api.github.com (the sample has no internet): `/zen`, `/users/{name}` and
/// `/users/{name}/repos` with JSON like GitHub's; unknown users get GitHub's 404 body.
struct FakeGitHubServer: HTTPServerHandler {
    static let zen = "Half measures are as bad as nothing at all."

    static let users: [String: (id: Int, name: String, repos: [(name: String, stars: Int)])] = [
        "ashfurrow": (100, "Ash Furrow", [("Moya", 15000), ("ashfurrow.com", 40)]),
        "moya": (13_662_162, "Moya", [("Moya", 15000), ("RxSwift-Moya", 300), ("Harvey", 1200)])
    ]

    /// Starts the server on a free loopback port.
    static func start() async throws -> HTTPServer {
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: FakeGitHubServer())
        try await server.start()
        return server
    }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        guard request.head.method == .get else { return json(["message": "Not Found"], status: 404) }
        let parts = request.head.path.split(separator: "/").map { $0.removingPercentEncoding ?? String($0) }
        switch parts.count {
        case 1 where parts[0] == "zen":
            return HTTPServerResponse(
                status: 200, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(Self.zen.utf8))
        case 2 where parts[0] == "users":
            guard let user = Self.users[parts[1].lowercased()] else {
                return json(["message": "Not Found"], status: 404)
            }
            return json(["login": parts[1], "id": user.id, "name": user.name, "public_repos": user.repos.count])
        case 3 where parts[0] == "users" && parts[2] == "repos":
            guard let user = Self.users[parts[1].lowercased()] else {
                return json(["message": "Not Found"], status: 404)
            }
            return json(
                user.repos.map {
                    ["name": $0.name, "stargazers_count": $0.stars, "full_name": "\(parts[1])/\($0.name)"]
                })
        default:
            return json(["message": "Not Found"], status: 404)
        }
    }

    private func json(_ object: Any, status: Int = 200) -> HTTPServerResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return HTTPServerResponse(
            status: status, headers: ["Content-Type": "application/json; charset=utf-8"], body: Array(data))
    }
}
