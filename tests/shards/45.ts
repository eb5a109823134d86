/** Shard 45 of the suite (tests/shards/shard.ts). */
import { runShard } from "./shard.ts";

await runShard(45);
