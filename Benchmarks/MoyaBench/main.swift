// MoyaBench: what the Moya layer costs per request, over our HTTPClient.
//
//   MoyaBench [--url http://127.0.0.1:18280/] [--connections 50] [--duration 3] [--warmup 1]
//             [--max-requests 2000000] [--modes stub-callback,stub-async,client,moya-async,moya-callback,moya-task]
//
// Modes, run one after another in this process (each bounded by --duration and --max-requests):
//   stub-callback  MoyaProvider.request(_:completion:) with an immediate stub (completes synchronously), one task
//   stub-async     `await provider.request(target)` with an immediate stub, one task
//   client         N tasks looping HTTPClient.execute(GET url) — the baseline
//   moya-async     the same requests through `await MoyaProvider.request(target)` (callback queue hop included)
//   moya-callback  the same through `request(_:completion:)` resumed from the completion
//   moya-task      the same through the package-internal `requestInCurrentTask` (URLRequest path)
//   moya-lane      the same through `requestInCurrentTask` on the transport lane (no URLRequest; what the gateway uses)
// Each mode prints one JSON line (requests/s, CPU µs per request from getrusage over all threads); the network
// modes also print Moya's extra CPU per request relative to `client`. The session sends no default headers, so
// Moya and the bare client send identical requests. Loopback URLs only.

import Foundation
import HTTPClientCore
import HTTPWire
import Moya
import NetCore

#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var url = "http://127.0.0.1:18280/"
    var connections = 50
    var duration = 3.0
    var warmup = 1.0
    var maxRequests = 2_000_000
    var modes = ["stub-callback", "stub-async", "client", "moya-async", "moya-callback", "moya-task", "moya-lane"]

    init(_ args: [String]) {
        func value(_ flag: String) -> String? {
            guard let i = args.firstIndex(of: flag), i + 1 < args.count else { return nil }
            return args[i + 1]
        }
        if let v = value("--url") { url = v }
        if let v = value("--connections").flatMap(Int.init) { connections = min(max(1, v), 1000) }
        if let v = value("--duration").flatMap(Double.init) { duration = min(max(0.1, v), 600) }
        if let v = value("--warmup").flatMap(Double.init) { warmup = min(max(0, v), 60) }
        if let v = value("--max-requests").flatMap(Int.init) { maxRequests = max(1, v) }
        if let v = value("--modes") { modes = v.split(separator: ",").map(String.init) }
    }
}

/// The benchmark's one endpoint: `GET` on the URL given.
struct BenchTarget: TargetType {
    let base: URL
    var baseURL: URL { base }
    var path: String { "" }
    var method: Moya.Method { .get }
    var task: Moya.Task { .requestPlain }
    var headers: [String: String]? { nil }
    var sampleData: Data { Data("Hello, World!".utf8) }
}

func warn(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}

func cpuMicros() -> Double {
    var usage = rusage()
    _ = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func us(_ t: timeval) -> Double { Double(t.tv_sec) * 1e6 + Double(t.tv_usec) }
    return us(usage.ru_utime) + us(usage.ru_stime)
}

func monotonicNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func f(_ x: Double, _ digits: Int = 1) -> String {
    let scale = pow(10.0, Double(digits))
    return String((x * scale).rounded() / scale)
}

/// Counts of one task's loop.
struct Tally: Sendable {
    var ok = 0
    var failed = 0
}

/// Runs `tasks` tasks, each calling `send` until `untilNs` or `cap` calls; `send` returns whether it got a 200.
func drive(tasks: Int, untilNs: UInt64, cap: Int, _ send: @escaping @Sendable () async -> Bool) async -> Tally {
    await withTaskGroup(of: Tally.self) { group in
        for _ in 0..<tasks {
            group.addTask {
                var tally = Tally()
                while tally.ok + tally.failed < cap, tally.failed < 100, monotonicNs() < untilNs {
                    if await send() { tally.ok += 1 } else { tally.failed += 1 }
                }
                return tally
            }
        }
        return await group.reduce(into: Tally()) {
            $0.ok += $1.ok
            $0.failed += $1.failed
        }
    }
}

/// Measures one mode: warm-up, then the timed run; prints and returns the CPU µs per request.
func measure(_ mode: String, tasks: Int, options: Options, _ send: @escaping @Sendable () async -> Bool) async -> Double
{
    let cap = max(1, options.maxRequests / tasks)
    if options.warmup > 0 {
        _ = await drive(tasks: tasks, untilNs: monotonicNs() + UInt64(options.warmup * 1e9), cap: cap, send)
    }
    let cpu0 = cpuMicros()
    let t0 = monotonicNs()
    let tally = await drive(tasks: tasks, untilNs: t0 + UInt64(options.duration * 1e9), cap: cap, send)
    let seconds = Double(monotonicNs() - t0) / 1e9
    let cpu = cpuMicros() - cpu0
    let total = tally.ok + tally.failed
    let perRequest = total > 0 ? cpu / Double(total) : 0
    print(
        "{\"tool\":\"MoyaBench\",\"mode\":\"\(mode)\",\"tasks\":\(tasks),\"seconds\":\(f(seconds, 3)),"
            + "\"requests\":\(total),\"failed\":\(tally.failed),\"rps\":\(f(Double(tally.ok) / seconds)),"
            + "\"cpu_us_per_req\":\(f(perRequest, 2))}")
    warn(
        "MoyaBench \(mode): \(total) requests in \(f(seconds, 2)) s = \(f(Double(tally.ok) / seconds, 0)) req/s, "
            + "CPU \(f(perRequest, 2)) µs/req, failed \(tally.failed)\n")
    return perRequest
}

/// `request(_:completion:)` as an async call.
func viaCallback(_ provider: MoyaProvider<BenchTarget>, _ target: BenchTarget) async -> Bool {
    await withCheckedContinuation { continuation in
        provider.request(target) { result in continuation.resume(returning: (try? result.get())?.statusCode == 200) }
    }
}

/// One synchronous immediate-stub request through the callback API.
func stubViaCallback(_ provider: MoyaProvider<BenchTarget>, _ target: BenchTarget) -> Bool {
    var ok = false
    provider.request(target) { ok = (try? $0.get())?.statusCode == 200 }
    return ok
}

func run(_ options: Options) async throws {
    guard options.url.hasPrefix("http://127."), let url = URL(string: options.url) else {
        warn("MoyaBench: loopback http://127.x URLs only\n")
        exit(2)
    }
    Socket.ignoreSIGPIPE()
    let group = try EventLoopGroup(threads: 1)
    var configuration = HTTPClient.Configuration()
    configuration.maxConnectionsPerOrigin = max(configuration.maxConnectionsPerOrigin, options.connections)
    configuration.responseTimeout = .seconds(10)
    let client = HTTPClient(configuration: configuration, group: group)
    let session = Session(client: client, headers: [:])
    let target = BenchTarget(base: url)
    let stubbed = MoyaProvider<BenchTarget>(stubClosure: MoyaProvider.immediatelyStub, session: session)
    let networked = MoyaProvider<BenchTarget>(session: session)
    let laned = MoyaProvider<BenchTarget>(
        endpointClosure: MoyaProvider<BenchTarget>.defaultEndpointMapping,
        requestClosure: MoyaProvider<BenchTarget>.defaultRequestMapping,
        stubClosure: MoyaProvider<BenchTarget>.neverStub,
        session: Session(client: client, headers: [:], redirectHandler: .doNotFollow),
        plugins: [], trackInflights: false, transportMapping: { $0.transportRequest() })
    let request = try HTTPClientRequest(url: options.url)

    var baseline: Double?
    for mode in options.modes {
        let perRequest: Double
        switch mode {
        case "stub-callback":
            perRequest = await measure(mode, tasks: 1, options: options) { stubViaCallback(stubbed, target) }
        case "stub-async":
            perRequest = await measure(mode, tasks: 1, options: options) {
                (try? await stubbed.request(target).get())?.statusCode == 200
            }
        case "client":
            perRequest = await measure(mode, tasks: options.connections, options: options) {
                (try? await client.execute(request))?.status == 200
            }
            baseline = perRequest
        case "moya-async":
            perRequest = await measure(mode, tasks: options.connections, options: options) {
                (try? await networked.request(target).get())?.statusCode == 200
            }
        case "moya-callback":
            perRequest = await measure(mode, tasks: options.connections, options: options) {
                await viaCallback(networked, target)
            }
        case "moya-task":
            perRequest = await measure(mode, tasks: options.connections, options: options) {
                (try? await networked.requestInCurrentTask(target).get())?.statusCode == 200
            }
        case "moya-lane":
            perRequest = await measure(mode, tasks: options.connections, options: options) {
                (try? await laned.requestInCurrentTask(target).get())?.statusCode == 200
            }
        default:
            warn("MoyaBench: unknown mode \(mode)\n")
            continue
        }
        if mode.hasPrefix("moya-"), let baseline, baseline > 0 {
            let extra = (perRequest - baseline) / baseline * 100
            print("{\"tool\":\"MoyaBench\",\"mode\":\"\(mode)\",\"moya_adds_cpu_percent\":\(f(extra))}")
            warn("MoyaBench \(mode): Moya adds \(f(extra))% CPU per request over HTTPClient.execute\n")
        }
    }
    client.shutdown()
}

try await run(Options(CommandLine.arguments))
