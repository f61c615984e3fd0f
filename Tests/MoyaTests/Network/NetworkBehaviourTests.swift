import Foundation
import HTTPClientCore
import HTTPWire
import NetCore
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Response mapping, validation, the async API, cancellation and in-flight sharing against the loopback httpbin.
@Suite struct NetworkBehaviourTests {

    // MARK: - Mapping

    @Test func mapsRealResponses() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let response = try await provider.response(BinTarget(bin, "/get"))
            #expect(response.statusCode == 200)
            #expect(response.response?.value(forHTTPHeaderField: "content-type") == "application/json")
            #expect(response.request?.url?.absoluteString == "http://127.0.0.1:\(bin.port)/get")
            #expect(response.response?.url?.absoluteString == "http://127.0.0.1:\(bin.port)/get")

            let json = try #require(try response.mapJSON() as? [String: Any])
            #expect(json["method"] as? String == "GET")
            #expect(json["target"] as? String == "/get")
            #expect(try response.map(Echo.self).path == "/get")
            #expect(try response.map(String.self, atKeyPath: "method") == "GET")
            #expect(try response.map(String.self, atKeyPath: "headers.x-session") == "s")
            #expect(try response.mapString(atKeyPath: "target") == "/get")

            let bytes = try await provider.response(BinTarget(bin, "/bytes/16"))
            #expect(bytes.data == Data(Httpbin.bytes(16)))
            #expect(throws: MoyaError.self) { try bytes.mapJSON() }
            #expect(throws: MoyaError.self) { try bytes.map(Echo.self) }

            let empty = try await provider.response(BinTarget(bin, "/status/204"))
            #expect(empty.statusCode == 204)
            #expect(empty.data.isEmpty)
            #expect(try empty.mapJSON(failsOnEmptyData: false) is NSNull)
        }
    }

    // MARK: - Validation

    @Test func validationFailuresCarryTheResponse() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            for (path, validation) in [
                ("/status/404", ValidationType.successCodes), ("/status/302", .successCodes),
                ("/status/500", .successAndRedirectCodes), ("/status/201", .customCodes([200]))
            ] {
                let result = await provider.request(BinTarget(bin, path, validationType: validation))
                guard case .failure(let error) = result else {
                    Issue.record("\(path) should fail validation")
                    continue
                }
                let code = Int(path.split(separator: "/").last!)!
                #expect(error.response?.statusCode == code)
                guard case .underlying(let underlying, let response?) = error,
                    case .statusCode(let statusResponse)? = underlying as? MoyaError
                else {
                    Issue.record("expected .underlying(MoyaError.statusCode, response), got \(error)")
                    continue
                }
                #expect(statusResponse.statusCode == code)
                #expect(statusResponse === response)
                #expect(response.request?.url?.path == path)
            }
            // Passing validation, and no validation at all.
            #expect(
                try await provider.response(BinTarget(bin, "/status/302", validationType: .successAndRedirectCodes))
                    .statusCode == 302)
            #expect(try await provider.response(BinTarget(bin, "/status/500")).statusCode == 500)
            #expect(
                try await provider.response(BinTarget(bin, "/status/201", validationType: .customCodes([201])))
                    .statusCode == 201)
        }
    }

    @Test func filtersOnRealResponses() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let response = try await provider.response(BinTarget(bin, "/status/404"))
            #expect(throws: MoyaError.self) { try response.filterSuccessfulStatusCodes() }
            do {
                _ = try response.filterSuccessfulStatusAndRedirectCodes()
                Issue.record("expected a statusCode error")
            } catch let error as MoyaError {
                guard case .statusCode(let failed) = error else {
                    Issue.record("expected statusCode, got \(error)")
                    return
                }
                #expect(failed.statusCode == 404)
            }
        }
    }

    // MARK: - async

    @Test func asyncRequestAndResponse() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let result = await provider.request(BinTarget(bin, "/anything/async?x=1"))
            // As in Moya, a `?` in the path is part of the path (appendingPathComponent escapes it).
            #expect(try result.echo().target == "/anything/async%3Fx=1")

            do {
                _ = try await provider.response(BinTarget(bin, "/status/418", validationType: .successCodes))
                Issue.record("expected a thrown MoyaError")
            } catch let error as MoyaError {
                #expect(error.response?.statusCode == 418)
            }

            let handler = await provider.requestWithHandler(BinTarget(bin, "/anything/handler"))
            #expect(try handler.echo().path == "/anything/handler")
        }
    }

    @Test func completionRunsOnTheGivenCallbackQueue() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let queue = DispatchQueue(label: "moya.test.callback")
            let key = DispatchSpecificKey<Int>()
            queue.setSpecific(key: key, value: 42)
            let onQueue = Recorder<Bool>()
            let result = await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<Moya.Response, MoyaError>, Never>) in
                provider.request(
                    BinTarget(bin, "/bytes/100000"), callbackQueue: queue,
                    progress: { _ in
                        onQueue.append(DispatchQueue.getSpecific(key: key) == 42)
                    },
                    completion: { result in
                        onQueue.append(DispatchQueue.getSpecific(key: key) == 42)
                        continuation.resume(returning: result)
                    })
            }
            #expect(try result.get().data.count == 100_000)
            #expect(onQueue.count >= 2)
            #expect(onQueue.values.allSatisfy { $0 })
        }
    }

    // MARK: - Cancellation
    //
    // The server would answer after 10 s; "promptly" is checked as "within 8 s", loose on purpose: in the whole suite
    // on two cores, other suites' synchronous waits starve the cooperative pool for seconds at a time. The
    // cancellation error itself shows the request did not run to completion.

    @Test func cancellingTheTokenEndsAnInFlightRequestPromptly() async throws {
        try await withHttpbin { bin async throws in
            let activity = Recorder<NetworkActivityChangeType>()
            let provider = binProvider(plugins: [NetworkActivityPlugin { change, _ in activity.append(change) }])
            let results = Recorder<Result<Moya.Response, MoyaError>>()
            let token = provider.request(BinTarget(bin, "/delay/10000")) { results.append($0) }
            #expect(await waitUntil { bin.hits("/delay/10000") == 1 }, "the request reached the server")
            #expect(results.count == 0)
            let cancelledAt = ContinuousClock.now
            token.cancel()
            #expect(token.isCancelled)
            #expect(await waitUntil(timeout: 8) { results.count == 1 })
            #expect(ContinuousClock.now - cancelledAt < .seconds(8), "before the server would answer (10 s)")
            let result = try #require(results.values.first)
            guard case .failure(let error) = result else {
                Issue.record("expected a cancellation, got \(result)")
                return
            }
            #expect(error.isCancellation)
            #expect(activity.values == [.began, .ended])
            token.cancel()
            try await _Concurrency.Task.sleep(for: .milliseconds(50))
            #expect(results.count == 1, "the completion runs once")
        }
    }

    @Test func cancellingTheSwiftTaskEndsAnInFlightRequestPromptly() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let task = _Concurrency.Task { await provider.request(BinTarget(bin, "/delay/10000")) }
            #expect(await waitUntil { bin.hits("/delay/10000") == 1 })
            let cancelledAt = ContinuousClock.now
            task.cancel()
            let result = await task.value
            #expect(ContinuousClock.now - cancelledAt < .seconds(8), "before the server would answer (10 s)")
            guard case .failure(let error) = result else {
                Issue.record("expected a cancellation, got \(result)")
                return
            }
            #expect(error.isCancellation)

            let throwing = _Concurrency.Task { try await provider.response(BinTarget(bin, "/delay/10001")) }
            #expect(await waitUntil { bin.hits("/delay/10001") == 1 })
            let thrownAt = ContinuousClock.now
            throwing.cancel()
            do {
                _ = try await throwing.value
                Issue.record("expected a cancellation error")
            } catch let error as MoyaError {
                #expect(error.isCancellation)
            }
            #expect(ContinuousClock.now - thrownAt < .seconds(8), "before the server would answer (10 s)")

            // The provider still works afterwards.
            #expect(try await provider.response(BinTarget(bin, "/get")).statusCode == 200)
        }
    }

    @Test func taskCancelledBeforeTheRequestNeverReachesTheServer() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let task = _Concurrency.Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await provider.request(BinTarget(bin, "/get"))
            }
            let result = await task.value
            guard case .failure(let error) = result else {
                Issue.record("expected a cancellation, got \(result)")
                return
            }
            #expect(error.isCancellation)
            try await _Concurrency.Task.sleep(for: .milliseconds(50))
            #expect(bin.hits("/get") == 0)
        }
    }

    // MARK: - In-flight sharing

    @Test func trackInflightsSendsIdenticalRequestsOnce() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(trackInflights: true)
            let results = Recorder<Result<Moya.Response, MoyaError>>()
            for _ in 0..<5 {
                provider.request(BinTarget(bin, "/delay/300")) { results.append($0) }
            }
            #expect(provider.inflightRequests.count == 1)
            #expect(provider.inflightRequests.values.first?.count == 5)
            #expect(await waitUntil { results.count == 5 })
            #expect(bin.hits("/delay/300") == 1, "five identical requests, one network call")
            let responses = try results.values.map { try $0.get() }
            #expect(responses.allSatisfy { $0.statusCode == 200 && $0.data == responses[0].data })
            #expect(provider.inflightRequests.isEmpty)

            // A different request is not shared; once finished, the same request goes out again.
            async let other = provider.request(BinTarget(bin, "/delay/301"))
            async let again = provider.request(BinTarget(bin, "/delay/300"))
            _ = await (other, again)
            #expect(bin.hits("/delay/301") == 1)
            #expect(bin.hits("/delay/300") == 2)
        }
    }

    @Test func trackInflightsWithConcurrentAsyncCallers() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(trackInflights: true)
            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask { (try? await provider.response(BinTarget(bin, "/delay/1500")))?.statusCode ?? -1 }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [200, 200, 200, 200])
            #expect(bin.hits("/delay/1500") == 1)
        }
    }

    @Test func trackInflightsSharedCallRunsOnTheCallersLoop() async throws {
        try await withHttpbin { bin async throws in
            let group = try EventLoopGroup(threads: 1)
            let loop = group.loops[0]
            let onLoop = Recorder<Bool>()
            let plugin = LoopCheckingPlugin(loop: loop, log: onLoop)
            let provider = MoyaProvider<BinTarget>(
                session: Session(client: HTTPClient(group: group), headers: [:]),
                plugins: [plugin], trackInflights: true)
            // Callers on the client's loop: the shared call is sent, received and delivered on that thread.
            let statuses = await AsyncTask(executorPreference: loop) {
                await withTaskGroup(of: Int.self) { tasks in
                    for _ in 0..<3 {
                        tasks.addTask { (try? await provider.response(BinTarget(bin, "/delay/200")))?.statusCode ?? -1 }
                    }
                    return await tasks.reduce(into: []) { $0.append($1) }
                }
            }.value
            #expect(statuses == [200, 200, 200])
            #expect(bin.hits("/delay/200") == 1)
            #expect(
                onLoop.values == [true, true, true, true, true], "willSend, didReceive and each process on the loop")

            // Callers off the loop are served the same way.
            let off = await provider.request(BinTarget(bin, "/delay/201"))
            #expect((try? off.get())?.statusCode == 200)
            group.shutdown()
        }
    }

    @Test func trackInflightsCancellingOneWaiterKeepsTheOthers() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(trackInflights: true)
            let first = Recorder<Result<Moya.Response, MoyaError>>()
            let second = Recorder<Result<Moya.Response, MoyaError>>()
            let token = provider.request(BinTarget(bin, "/delay/400")) { first.append($0) }
            provider.request(BinTarget(bin, "/delay/400")) { second.append($0) }
            #expect(await waitUntil { bin.hits("/delay/400") == 1 })
            token.cancel()
            #expect(await waitUntil { first.count == 1 && second.count == 1 })
            #expect(
                first.values.first.map { if case .failure(let error) = $0 { error.isCancellation } else { false } }
                    == true)
            #expect((try? second.values.first?.get())?.statusCode == 200)
            #expect(bin.hits("/delay/400") == 1)
        }
    }

    // MARK: - Request mapping errors

    @Test func invalidURLsAreRequestMappingErrors() async throws {
        try await withHttpbin { bin async throws in
            let badEndpoint = MoyaProvider<BinTarget>(
                endpointClosure: { target in
                    Endpoint(
                        url: "http://127.0.0.1:\(bin.port)/bad path{}",
                        sampleResponseClosure: { .networkResponse(200, Data()) },
                        method: target.method, task: target.task, httpHeaderFields: target.headers)
                }, session: Session(client: HTTPClient(), headers: [:]))
            let result = await badEndpoint.request(BinTarget(bin, "/get"))
            guard case .failure(.requestMapping(let url)) = result else {
                Issue.record("expected requestMapping, got \(result)")
                return
            }
            #expect(url == "http://127.0.0.1:\(bin.port)/bad path{}")

            let provider = binProvider()
            var ftp = BinTarget(bin, "/file")
            ftp.baseURL = URL(string: "ftp://127.0.0.1:\(bin.port)")!
            let ftpResult = await provider.request(ftp)
            guard case .failure(.requestMapping(let ftpURL)) = ftpResult else {
                Issue.record("expected requestMapping, got \(ftpResult)")
                return
            }
            #expect(ftpURL == "ftp://127.0.0.1:\(bin.port)/file")

            var noHost = BinTarget(bin, "/x")
            noHost.baseURL = URL(string: "http:///nohost")!
            let noHostResult = await provider.request(noHost)
            guard case .failure(.requestMapping) = noHostResult else {
                Issue.record("expected requestMapping, got \(noHostResult)")
                return
            }
            #expect(bin.startedTargets.isEmpty, "nothing reached the server")
        }
    }
}

/// Records, for each hook but `prepare`, whether it ran on `loop`'s thread.
private struct LoopCheckingPlugin: PluginType {
    let loop: EventLoop
    let log: Recorder<Bool>
    func willSend(_ request: RequestType, target: TargetType) { log.append(loop.inEventLoop) }
    func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType) { log.append(loop.inEventLoop) }
    func process(_ result: Result<Moya.Response, MoyaError>, target: TargetType) -> Result<Moya.Response, MoyaError> {
        log.append(loop.inEventLoop)
        return result
    }
}
