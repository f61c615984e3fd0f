import Foundation
import HTTPServerCore
import Moya

/// Runs the README's requests with both the completion-handler and the async API. Returns the exit status: 0 when
/// every request did what it should, 1 otherwise.
func runSample() async -> Int32 {
    var server: HTTPServer?
    if let override = ProcessInfo.processInfo.environment["MOYA_SAMPLE_BASE_URL"], let url = URL(string: override) {
        GitHubAPI.baseURL = url
    } else {
        do {
            let started = try await FakeGitHubServer.start()
            server = started
            GitHubAPI.baseURL = URL(string: "http://127.0.0.1:\(started.localAddresses[0].port)")!
        } catch {
            print("could not start the fake GitHub server: \(error)")
            return 1
        }
    }
    print("GitHub API: \(GitHubAPI.baseURL.absoluteString)")

    let provider = MoyaProvider<GitHub>()
    var failures = 0

    // 1. The completion-handler API, as in the README.
    for target in [GitHub.zen, .userProfile("ashfurrow"), .userRepositories("ashfurrow")] {
        let ok = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            provider.request(target) { result in
                switch result {
                case .success(let moyaResponse):
                    let data = moyaResponse.data  // Data, your JSON response is probably in here!
                    let statusCode = moyaResponse.statusCode  // Int - 200, 401, 500, etc
                    print("[completion] \(describe(target)): \(statusCode) \(summary(of: target, data))")
                    continuation.resume(returning: statusCode == 200)
                case .failure(let error):
                    print("[completion] \(describe(target)): failed: \(error.localizedDescription)")
                    continuation.resume(returning: false)
                }
            }
        }
        if !ok { failures += 1 }
    }

    // 2. The async API.
    for target in [GitHub.zen, .userProfile("moya"), .userRepositories("moya")] {
        do {
            let response = try await provider.response(target)
            print("[async] \(describe(target)): \(response.statusCode) \(summary(of: target, response.data))")
        } catch {
            print("[async] \(describe(target)): failed: \(error.localizedDescription)")
            failures += 1
        }
    }

    // 3. A failure the sample expects: an unknown user is a 404, which `.successCodes` validation turns into an error.
    switch await provider.request(.userProfile("nobody-here")) {
    case .success(let response):
        print("[async] userProfile(nobody-here): unexpected \(response.statusCode)")
        failures += 1
    case .failure(let error) where error.response?.statusCode == 404:
        print("[async] userProfile(nobody-here): failed as expected with status 404")
    case .failure(let error):
        print("[async] userProfile(nobody-here): failed: \(error.localizedDescription)")
        failures += 1
    }

    await server?.shutdown(timeout: .seconds(1))
    print(failures == 0 ? "All requests succeeded." : "\(failures) request(s) failed.")
    return failures == 0 ? 0 : 1
}

private func describe(_ target: GitHub) -> String {
    switch target {
    case .zen: return "zen"
    case .userProfile(let name): return "userProfile(\(name))"
    case .userRepositories(let name): return "userRepositories(\(name))"
    }
}

/// A one-line summary of a response body.
private func summary(of target: GitHub, _ data: Data) -> String {
    let decoder = JSONDecoder()
    switch target {
    case .zen:
        return String(decoding: data, as: UTF8.self)
    case .userProfile:
        guard let user = try? decoder.decode(User.self, from: data) else { return "(not a user)" }
        return "\(user.name ?? user.login) (@\(user.login), id \(user.id)), \(user.publicRepos ?? 0) public repos"
    case .userRepositories:
        guard let repositories = try? decoder.decode([Repository].self, from: data) else {
            return "(not a repository list)"
        }
        return repositories.map { "\($0.name) ★\($0.stargazersCount)" }.joined(separator: ", ")
    }
}
