import Foundation

// MoyaSample: Moya's README example (the GitHub API) against a loopback GitHub-like server.
// Usage: swift run MoyaSample   (set MOYA_SAMPLE_BASE_URL to use another server instead of the built-in one)
let status = await runSample()
exit(status)
