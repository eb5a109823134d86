/** Shard 39 of the suite (tests/shards/shard.ts). */
import { runShard } from "./shard.ts";

await runShard(39);
