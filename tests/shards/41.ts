/** Shard 41 of the suite (tests/shards/shard.ts). */
import { runShard } from "./shard.ts";

await runShard(41);
