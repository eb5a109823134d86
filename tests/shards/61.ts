/** Shard 61 of the suite (tests/shards/shard.ts). */
import { runShard } from "./shard.ts";

await runShard(61);
