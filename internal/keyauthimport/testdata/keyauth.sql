/*M!999999\- enable the sandbox mode */ 
-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)
--
-- Host: localhost    Database: keyauth
-- ------------------------------------------------------
-- Server version	10.11.19-MariaDB-0+deb12u1

/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET @OLD_CHARACTER_SET_RESULTS=@@CHARACTER_SET_RESULTS */;
/*!40101 SET @OLD_COLLATION_CONNECTION=@@COLLATION_CONNECTION */;
/*!40101 SET NAMES utf8mb4 */;
/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;
/*!40103 SET TIME_ZONE='+00:00' */;
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;
/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;
/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;
/*!40111 SET @OLD_SQL_NOTES=@@SQL_NOTES, SQL_NOTES=0 */;

--
-- Table structure for table `accounts`
--

DROP TABLE IF EXISTS `accounts`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `accounts` (
  `username` varchar(65) NOT NULL,
  `email` varchar(40) NOT NULL,
  `password` varchar(60) NOT NULL,
  `ownerid` varchar(65) DEFAULT NULL,
  `role` varchar(65) NOT NULL,
  PRIMARY KEY (`username`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `accounts`
--

LOCK TABLES `accounts` WRITE;
/*!40000 ALTER TABLE `accounts` DISABLE KEYS */;
INSERT INTO `accounts` VALUES
('ann','ann@example.com','$2y$04$vQLL.mZTbSixIyR4RPYQkehP5fWaHVKd9DmCDg5cD5HyJkPkVWDOa','OWNERANN01','seller'),
('zed','zed@example.com','$2y$04$OCLJa4LsQu2jlF.JBANfp.Tw.V9T.pXDkbam1Cc/sS/d/6nfij9qW','OWNERZED01','tester');
/*!40000 ALTER TABLE `accounts` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `apps`
--

DROP TABLE IF EXISTS `apps`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `apps` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `owner` varchar(65) NOT NULL,
  `name` varchar(40) NOT NULL,
  `secret` varchar(64) NOT NULL,
  `ownerid` varchar(39) NOT NULL,
  `enabled` int(11) NOT NULL,
  `banned` int(11) NOT NULL DEFAULT 0,
  `paused` int(11) NOT NULL DEFAULT 0,
  `hwidcheck` int(11) NOT NULL,
  `vpnblock` int(11) NOT NULL DEFAULT 0,
  `sellerkey` varchar(32) NOT NULL,
  `ver` varchar(5) NOT NULL DEFAULT '1.0',
  `download` varchar(120) DEFAULT NULL,
  `webhook` varchar(130) DEFAULT NULL,
  `auditLogWebhook` varchar(130) DEFAULT NULL,
  `hashcheck` int(11) NOT NULL DEFAULT 0,
  `session` int(11) NOT NULL DEFAULT 21600,
  `format` varchar(99) NOT NULL DEFAULT '******-******-******-******-******-******',
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `apps`
--

LOCK TABLES `apps` WRITE;
/*!40000 ALTER TABLE `apps` DISABLE KEYS */;
INSERT INTO `apps` VALUES
(1,'ann','Cheat Loader','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','OWNERANN01',1,0,0,1,1,'sk1','1.0',NULL,'https://discord.com/api/webhooks/1111/tok-en_A','https://hooks.example.com/audit',0,21600,'LOADER-******-******'),
(2,'ann','Tool\'s Pro','a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90','OWNERANN01',1,0,0,0,0,'sk2','2.1',NULL,NULL,NULL,0,21600,'******-******-******-******-******-******'),
(3,'zed','Other Owner App','0000111122223333444455556666777788889999aaaabbbbccccddddeeeeffff','OWNERZED01',1,0,0,0,0,'sk3','1.0',NULL,NULL,NULL,0,21600,'******-******-******-******-******-******');
/*!40000 ALTER TABLE `apps` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `bans`
--

DROP TABLE IF EXISTS `bans`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `bans` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `hwid` varchar(500) DEFAULT NULL,
  `ip` varchar(49) DEFAULT NULL,
  `type` varchar(5) DEFAULT NULL,
  `app` varchar(64) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `bans`
--

LOCK TABLES `bans` WRITE;
/*!40000 ALTER TABLE `bans` DISABLE KEYS */;
INSERT INTO `bans` VALUES
(1,'HWID-CRACKER-9',NULL,'hwid','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f'),
(2,NULL,'192.0.2.66','ip','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f'),
(3,NULL,'not-an-ip','ip','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f'),
(4,'HWID-CRACKER-9',NULL,'hwid','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f');
/*!40000 ALTER TABLE `bans` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `chats`
--

DROP TABLE IF EXISTS `chats`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `chats` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `name` varchar(50) NOT NULL,
  `delay` int(11) NOT NULL,
  `app` varchar(64) NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `chats`
--

LOCK TABLES `chats` WRITE;
/*!40000 ALTER TABLE `chats` DISABLE KEYS */;
INSERT INTO `chats` VALUES
(1,'general',5,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f');
/*!40000 ALTER TABLE `chats` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `files`
--

DROP TABLE IF EXISTS `files`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `files` (
  `pk` int(11) NOT NULL AUTO_INCREMENT,
  `name` varchar(49) NOT NULL,
  `id` varchar(49) NOT NULL,
  `url` varchar(2048) DEFAULT NULL,
  `size` varchar(49) NOT NULL,
  `uploaddate` varchar(49) NOT NULL,
  `app` varchar(64) NOT NULL,
  `authed` int(11) NOT NULL DEFAULT 1,
  PRIMARY KEY (`pk`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `files`
--

LOCK TABLES `files` WRITE;
/*!40000 ALTER TABLE `files` DISABLE KEYS */;
INSERT INTO `files` VALUES
(1,'loader.dll','123456','https://cdn.example.com/loader.dll','1.2 MB','1700000000','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',1);
/*!40000 ALTER TABLE `files` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `keys`
--

DROP TABLE IF EXISTS `keys`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `keys` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `key` varchar(70) NOT NULL,
  `note` varchar(69) DEFAULT NULL,
  `expires` varchar(49) NOT NULL,
  `status` varchar(49) NOT NULL,
  `level` varchar(12) NOT NULL DEFAULT '',
  `genby` varchar(65) DEFAULT NULL,
  `gendate` varchar(49) NOT NULL,
  `usedon` int(11) DEFAULT NULL,
  `usedby` varchar(70) DEFAULT NULL,
  `app` varchar(64) NOT NULL,
  `banned` varchar(99) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=10 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `keys`
--

LOCK TABLES `keys` WRITE;
/*!40000 ALTER TABLE `keys` DISABLE KEYS */;
INSERT INTO `keys` VALUES
(1,'LOADER-AB12CD-EF34GH','for a reseller','2592000','Not Used','1','ann','1700000000',NULL,NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL),
(2,'LOADER-PREM01-XYZ789',NULL,'2592000','Used','5','ann','1700000000',1700003600,'alice','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL),
(3,'LOADER-BANNED-000001',NULL,'86400','Banned','1','ann','1700000000',NULL,NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','chargeback'),
(4,'LOADER-LIFETM-999999','lifetime','3153600000','Not Used','1','ann','1700000000',NULL,NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL),
(5,'loader-lower-case-key',NULL,'604800','Not Used','1','ann','1700000000',NULL,NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL),
(6,'LOADER-AB12CD-EF34GH','the same key again','60','Not Used','1','ann','1700000000',NULL,NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL),
(7,'LOADER-BADLVL-000002',NULL,'3600','Not Used','gold','ann','1700000000',NULL,NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL),
(8,'TOOL-KEY-0001',NULL,'86400','Not Used','1','ann','1700000000',NULL,NULL,'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90',NULL),
(9,'ZED-KEY-0001',NULL,'86400','Not Used','1','zed','1700000000',NULL,NULL,'0000111122223333444455556666777788889999aaaabbbbccccddddeeeeffff',NULL);
/*!40000 ALTER TABLE `keys` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `logs`
--

DROP TABLE IF EXISTS `logs`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `logs` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `logdate` varchar(49) NOT NULL,
  `logdata` varchar(275) NOT NULL,
  `credential` varchar(70) DEFAULT NULL,
  `pcuser` varchar(32) DEFAULT NULL,
  `logapp` varchar(64) NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `logs`
--

LOCK TABLES `logs` WRITE;
/*!40000 ALTER TABLE `logs` DISABLE KEYS */;
INSERT INTO `logs` VALUES
(1,'1700000000','opened the menu','alice','DESKTOP-1','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f');
/*!40000 ALTER TABLE `logs` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `sessions`
--

DROP TABLE IF EXISTS `sessions`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `sessions` (
  `pk` int(11) NOT NULL AUTO_INCREMENT,
  `id` varchar(10) NOT NULL,
  `credential` varchar(70) DEFAULT NULL,
  `app` varchar(64) NOT NULL,
  `expiry` int(11) NOT NULL,
  `created_at` int(11) DEFAULT NULL,
  `enckey` varchar(100) DEFAULT NULL,
  `validated` int(11) NOT NULL DEFAULT 0,
  `ip` varchar(45) DEFAULT NULL,
  PRIMARY KEY (`pk`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `sessions`
--

LOCK TABLES `sessions` WRITE;
/*!40000 ALTER TABLE `sessions` DISABLE KEYS */;
INSERT INTO `sessions` VALUES
(1,'s3ss10n0ne','alice','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',2145916800,1700000000,NULL,1,'203.0.113.7');
/*!40000 ALTER TABLE `sessions` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `subs`
--

DROP TABLE IF EXISTS `subs`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `subs` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `user` varchar(70) NOT NULL,
  `subscription` varchar(49) NOT NULL,
  `expiry` varchar(49) NOT NULL,
  `app` varchar(64) NOT NULL,
  `key` varchar(70) DEFAULT NULL,
  `paused` int(11) NOT NULL DEFAULT 0,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=10 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `subs`
--

LOCK TABLES `subs` WRITE;
/*!40000 ALTER TABLE `subs` DISABLE KEYS */;
INSERT INTO `subs` VALUES
(1,'alice','premium','2145916800','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','LOADER-PREM01-XYZ789',0),
(2,'alice','default','2145830400','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL,0),
(3,'bob','default','2145916800','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL,0),
(4,'carol','default','2145916800','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL,1),
(5,'dave','default','1600000000','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL,0),
(6,'frank','default','2145916800','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL,0),
(7,'gina','vip','2145916800','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',NULL,0),
(8,'tom','default','2145916800','a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90','TOOL-KEY-0001',0),
(9,'zoe','default','2145916800','0000111122223333444455556666777788889999aaaabbbbccccddddeeeeffff',NULL,0);
/*!40000 ALTER TABLE `subs` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `subscriptions`
--

DROP TABLE IF EXISTS `subscriptions`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `subscriptions` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `name` varchar(49) NOT NULL,
  `level` varchar(49) NOT NULL,
  `app` varchar(64) NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `subscriptions`
--

LOCK TABLES `subscriptions` WRITE;
/*!40000 ALTER TABLE `subscriptions` DISABLE KEYS */;
INSERT INTO `subscriptions` VALUES
(1,'default','1','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f'),
(2,'premium','5','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f'),
(3,'default','1','a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90');
/*!40000 ALTER TABLE `subscriptions` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `users`
--

DROP TABLE IF EXISTS `users`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `users` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `username` varchar(70) NOT NULL,
  `email` varchar(40) DEFAULT NULL,
  `password` varchar(60) DEFAULT NULL,
  `hwid` varchar(2000) DEFAULT NULL,
  `app` varchar(64) NOT NULL,
  `owner` varchar(65) DEFAULT NULL,
  `createdate` int(11) DEFAULT NULL,
  `lastlogin` int(11) DEFAULT NULL,
  `banned` varchar(99) DEFAULT NULL,
  `ip` varchar(49) DEFAULT NULL,
  `cooldown` int(11) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=13 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `users`
--

LOCK TABLES `users` WRITE;
/*!40000 ALTER TABLE `users` DISABLE KEYS */;
INSERT INTO `users` VALUES
(1,'alice','fc2398a73dd54d6237c4fdb58fd7d75347cf5af3','$2y$04$kKTRi/u0zWU8xFBArrnghO0dzZVrdtv4TQfz13oQ6e7Acd7FZ9yF.','HWID-ALICE-1','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,1700007200,NULL,'203.0.113.7',NULL),
(2,'bob','bob@example.com','$2y$04$7MIuVjs9otYmCX8s4u4L4OopoYzLDoxOVNGW4y9GmdhHP6gybE8ku',NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,NULL,'caught speedhacking','198.51.100.2',NULL),
(3,'carol',NULL,NULL,NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,NULL,NULL,NULL,NULL),
(4,'dave',NULL,'$2y$04$JL3FCu7qufsofrgXvDnSJ.Lz4aThrBcS0.SLtdwlWuDT/eeuEe4kS',NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,1700000000,NULL,NULL,NULL),
(5,'erin',NULL,'$2y$04$1kWevKkVTSiTYESE79O4Vu9iA6oQndbcuSegnIK8mDGZjST2Q8zJy',NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,NULL,NULL,NULL,NULL),
(6,'frank',NULL,'$2y$04$DkKxquALliu7F/UUQzEfgueodAOflvMoiL4daS1x5cx6QOekQ0Tg.','HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-HWID-FRANK-','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,NULL,NULL,NULL,NULL),
(7,'gina','gina@example.com','$2y$04$t/QTqUbL.xRNn1Q2Yb3gkufpvXhBKqW9.WFYdpNqKSgEbS5P8FBN2',NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,NULL,NULL,NULL,NULL),
(8,'x',NULL,'$2y$04$1kWevKkVTSiTYESE79O4Vu9iA6oQndbcuSegnIK8mDGZjST2Q8zJy',NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,NULL,NULL,NULL,NULL),
(9,'o\'neil',NULL,'$2y$04$1kWevKkVTSiTYESE79O4Vu9iA6oQndbcuSegnIK8mDGZjST2Q8zJy',NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,NULL,NULL,NULL,NULL),
(10,'Gina',NULL,'$2y$04$1kWevKkVTSiTYESE79O4Vu9iA6oQndbcuSegnIK8mDGZjST2Q8zJy',NULL,'5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f','ann',1700000000,NULL,NULL,NULL,NULL),
(11,'tom',NULL,'$2y$04$2d6ayc3rwDiQtXF02nqxWO1vpSXrY5n5UUkgSL.sEDxHP9ApKAGmC',NULL,'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90','ann',1700000000,NULL,NULL,NULL,NULL),
(12,'zoe',NULL,'$2y$04$2d6ayc3rwDiQtXF02nqxWO1vpSXrY5n5UUkgSL.sEDxHP9ApKAGmC',NULL,'0000111122223333444455556666777788889999aaaabbbbccccddddeeeeffff','zed',1700000000,NULL,NULL,NULL,NULL);
/*!40000 ALTER TABLE `users` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `uservars`
--

DROP TABLE IF EXISTS `uservars`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `uservars` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `name` varchar(99) NOT NULL,
  `data` varchar(500) NOT NULL,
  `user` varchar(70) NOT NULL,
  `app` varchar(64) NOT NULL,
  `readOnly` int(11) NOT NULL DEFAULT 0,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `uservars`
--

LOCK TABLES `uservars` WRITE;
/*!40000 ALTER TABLE `uservars` DISABLE KEYS */;
INSERT INTO `uservars` VALUES
(1,'theme','dark','alice','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',0),
(2,'credits','100','alice','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',1),
(3,'theme','light','ghost','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',0);
/*!40000 ALTER TABLE `uservars` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `vars`
--

DROP TABLE IF EXISTS `vars`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `vars` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `varid` varchar(49) NOT NULL,
  `msg` varchar(1000) NOT NULL,
  `app` varchar(64) NOT NULL,
  `authed` int(11) NOT NULL DEFAULT 1,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `vars`
--

LOCK TABLES `vars` WRITE;
/*!40000 ALTER TABLE `vars` DISABLE KEYS */;
INSERT INTO `vars` VALUES
(1,'download','https://cdn.example.com/loader.exe','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',1),
(2,'motd','Line one\nIt\'s \"quoted\" \\ with a backslash	tab','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',0),
(3,'download','https://cdn.example.com/tool.exe','a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90',1);
/*!40000 ALTER TABLE `vars` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `webhooks`
--

DROP TABLE IF EXISTS `webhooks`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `webhooks` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `webid` varchar(10) NOT NULL,
  `baselink` varchar(200) NOT NULL,
  `useragent` varchar(49) NOT NULL DEFAULT 'KeyAuth',
  `app` varchar(64) NOT NULL,
  `authed` int(11) NOT NULL DEFAULT 1,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `webhooks`
--

LOCK TABLES `webhooks` WRITE;
/*!40000 ALTER TABLE `webhooks` DISABLE KEYS */;
INSERT INTO `webhooks` VALUES
(1,'Ab3dE5gH7j','https://api.example.com/check?user=','KeyAuth','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f',1);
/*!40000 ALTER TABLE `webhooks` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `whitelist`
--

DROP TABLE IF EXISTS `whitelist`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `whitelist` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `ip` varchar(49) NOT NULL,
  `app` varchar(64) NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `whitelist`
--

LOCK TABLES `whitelist` WRITE;
/*!40000 ALTER TABLE `whitelist` DISABLE KEYS */;
INSERT INTO `whitelist` VALUES
(1,'198.51.100.9','5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f');
/*!40000 ALTER TABLE `whitelist` ENABLE KEYS */;
UNLOCK TABLES;
/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;

/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;
/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;
/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */;
/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;
/*!40101 SET CHARACTER_SET_RESULTS=@OLD_CHARACTER_SET_RESULTS */;
/*!40101 SET COLLATION_CONNECTION=@OLD_COLLATION_CONNECTION */;
/*!40111 SET SQL_NOTES=@OLD_SQL_NOTES */;

-- Dump completed
