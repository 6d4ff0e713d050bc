// Package examples holds the bundled example repositories; its tests load each one,
// so the examples cannot rot:
//
//   - quickstart: a small, readable release plugin, two extension plugins and a
//     cluster written twice, in YAML and in HCL;
//   - fuel-mitaka: the real Fuel 9.x data (nailgun fixture, fuel-library tasks and
//     four upstream plugins), copied unmodified, wrapped by a release-plugin
//     metadata.yaml;
//   - tripleo-capabilities: the TripleO 7.0.0 templates with capabilities added and
//     three clusters choosing their implementations by requires;
//   - hooks/post-receive: a git server hook that asks fuelsync serve to reconcile;
//   - ci/: a GitHub Actions workflow and a GitLab CI job running validate and diff
//     (internal/cli's TestPostReceiveHook and TestCIExamples run them).
package examples
