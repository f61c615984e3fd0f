import Foundation

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

enum GitHub {
    case zen
    case userProfile(String)
    case search(String)
    case post([String: Any])
}

extension GitHub: TargetType {
    var baseURL: URL { URL(string: "https://api.github.com")! }
    var path: String {
        switch self {
        case .zen: return "/zen"
        case .userProfile(let name): return "/users/\(name)"
        case .search: return "/search"
        case .post: return "/post"
        }
    }
    var method: Moya.Method {
        switch self {
        case .post: return .post
        default: return .get
        }
    }
    var task: Moya.Task {
        switch self {
        case .search(let query): return .requestParameters(parameters: ["q": query], encoding: URLEncoding.default)
        case .post(let body): return .requestParameters(parameters: body, encoding: JSONEncoding.default)
        default: return .requestPlain
        }
    }
    var sampleData: Data {
        switch self {
        case .zen: return Data("Half measures are as bad as nothing at all.".utf8)
        case .userProfile(let name): return Data("{\"login\": \"\(name)\", \"id\": 100}".utf8)
        default: return Data()
        }
    }
    var headers: [String: String]? { nil }
}

/// A general-purpose target whose every property is set by the test.
struct TestTarget: TargetType, AccessTokenAuthorizable {
    var baseURL = URL(string: "https://example.com")!
    var path = "/path"
    var method: Moya.Method = .get
    var task: Moya.Task = .requestPlain
    var sampleData = Data("sample".utf8)
    var headers: [String: String]? = nil
    var validationType: ValidationType = .none
    var authorizationType: AuthorizationType? = nil
}

/// Thread-safe recorder for tests.
final class Recorder<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Value] = []
    func append(_ value: Value) { lock.withLock { items.append(value) } }
    var values: [Value] { lock.withLock { items } }
    var count: Int { lock.withLock { items.count } }
}

/// Records every hook call as "<hook>:<tag>".
struct RecordingPlugin: PluginType {
    let tag: String
    let log: Recorder<String>
    var header: (String, String)? = nil

    func prepare(_ request: URLRequest, target: TargetType) -> URLRequest {
        log.append("prepare:\(tag)")
        var request = request
        if let header { request.setValue(header.1, forHTTPHeaderField: header.0) }
        return request
    }
    func willSend(_ request: RequestType, target: TargetType) { log.append("willSend:\(tag)") }
    func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType) { log.append("didReceive:\(tag)") }
    func process(_ result: Result<Moya.Response, MoyaError>, target: TargetType) -> Result<Moya.Response, MoyaError> {
        log.append("process:\(tag)")
        return result
    }

    /// What plugins tagged `tags`, in that order, record for one request sent: each hook in turn for every plugin.
    static func calls(of tags: [String]) -> [String] {
        ["prepare", "willSend", "didReceive", "process"].flatMap { hook in tags.map { "\(hook):\($0)" } }
    }
}

/// Waits (polling) until `condition` holds or the timeout passes.
func waitUntil(timeout: TimeInterval = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return false }
        try? await _Concurrency.Task.sleep(nanoseconds: 2_000_000)
    }
    return true
}

extension Data {
    var utf8String: String { String(decoding: self, as: UTF8.self) }
}

extension MoyaError {
    var isCancellation: Bool {
        if case .underlying(let error as NSError, nil) = self {
            return error.domain == NSURLErrorDomain && error.code == NSURLErrorCancelled
        }
        return false
    }
}

/// A `trackInflights` provider of ``GitHub`` whose stubs answer after `delay` seconds, counting every call (a sample
/// drawn) in `counter`: identical requests in flight share one call.
func countingProvider(delay: TimeInterval, counter: Recorder<Int>, plugins: [PluginType] = []) -> MoyaProvider<GitHub> {
    countingProvider(stubClosure: MoyaProvider.delayedStub(delay), counter: counter, plugins: plugins)
}

/// The same with the stubs `stubClosure` says (`immediatelyStub`: answered before the caller waits).
func countingProvider(
    stubClosure: @escaping MoyaProvider<GitHub>.StubClosure, counter: Recorder<Int>, plugins: [PluginType] = []
) -> MoyaProvider<GitHub> {
    MoyaProvider<GitHub>(
        endpointClosure: { target in
            Endpoint(
                url: URL(target: target).absoluteString,
                sampleResponseClosure: {
                    counter.append(1)
                    return .networkResponse(200, target.sampleData)
                },
                method: target.method, task: target.task, httpHeaderFields: target.headers)
        }, stubClosure: stubClosure, plugins: plugins, trackInflights: true)
}
