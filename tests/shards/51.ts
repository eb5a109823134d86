/** Shard 51 of the suite (tests/shards/shard.ts). */
import { runShard } from "./shard.ts";

await runShard(51);
