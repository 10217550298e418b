// The nginx scale test (three instances behind nginx) with the instances sharing a Redis Cluster
// of 3 masters and 3 replicas instead of one redis-server.
process.env.MCP_TEST_REDIS = 'redis-cluster'
await import('./cluster.test.js')
