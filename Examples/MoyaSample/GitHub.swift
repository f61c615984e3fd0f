import Foundation
import Moya
import Synchronization

// The GitHub API target, written as in Moya's README and demo.

enum GitHub {
    case zen
    case userProfile(String)
    case userRepositories(String)
}

/// Where the API lives. `https://api.github.com` by default; the sample points it at its own loopback server (or at
/// `MOYA_SAMPLE_BASE_URL` when that is set).
enum GitHubAPI {
    private static let url = Mutex(URL(string: "https://api.github.com")!)

    static var baseURL: URL {
        get { url.withLock { $0 } }
        set { url.withLock { $0 = newValue } }
    }
}

extension GitHub: TargetType {
    var baseURL: URL { GitHubAPI.baseURL }

    var path: String {
        switch self {
        case .zen:
            return "/zen"
        case .userProfile(let name):
            return "/users/\(name.urlEscaped)"
        case .userRepositories(let name):
            return "/users/\(name.urlEscaped)/repos"
        }
    }

    var method: Moya.Method { .get }

    var task: Task {
        switch self {
        case .userRepositories:
            return .requestParameters(parameters: ["sort": "pushed"], encoding: URLEncoding.default)
        default:
            return .requestPlain
        }
    }

    var validationType: ValidationType { .successCodes }

    var sampleData: Data {
        switch self {
        case .zen:
            return Data("Half measures are as bad as nothing at all.".utf8)
        case .userProfile(let name):
            return Data("{\"login\": \"\(name)\", \"id\": 100}".utf8)
        case .userRepositories(let name):
            return Data("[{\"name\": \"\(name)\", \"stargazers_count\": 0}]".utf8)
        }
    }

    var headers: [String: String]? { ["Accept": "application/vnd.github+json"] }
}

extension String {
    fileprivate var urlEscaped: String { addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? self }
}

// MARK: - Models

struct User: Decodable {
    let login: String
    let id: Int
    let name: String?
    let publicRepos: Int?

    enum CodingKeys: String, CodingKey {
        case login, id, name
        case publicRepos = "public_repos"
    }
}

struct Repository: Decodable {
    let name: String
    let stargazersCount: Int

    enum CodingKeys: String, CodingKey {
        case name
        case stargazersCount = "stargazers_count"
    }
}
